-- The shape checks of pushed tables. The controller validated every string already; this is the
-- second line: a table that is not exactly the contract's shape is refused whole, so nothing a
-- Kubernetes object carried can become something else than data here.
local cjson = require("cjson.safe")

local _M = {}

local null = cjson.null
local METHODS = { round_robin = true, ewma = true, chash = true, sticky = true }

local function is_array(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" then return false end
    n = n + 1
  end
  return n == #t
end

local function only_keys(t, allowed)
  for k in pairs(t) do
    if not allowed[k] then return false, k end
  end
  return true
end

local function short(s)
  -- a reason names an entry; keep it one short printable line
  s = tostring(s)
  if #s > 64 then s = s:sub(1, 64) .. "..." end
  return (s:gsub("[^%w_.:/%-%*%$ ]", "?"))
end

--- version checks a table's version string.
function _M.version(v)
  return type(v) == "string" and #v >= 1 and #v <= 128 and v:find("^[%w_.:%-]+$") ~= nil
end

--- ipv4 is true for a dotted quad whose octets are 0..255.
function _M.ipv4(a)
  local o1, o2, o3, o4 = a:match("^(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)$")
  if not o1 then return false end
  for _, o in ipairs({ o1, o2, o3, o4 }) do
    if tonumber(o) > 255 then return false end
  end
  return true
end

--- ipv6 is true for an IPv6 address without brackets: hex groups of 1-4 digits, at most one
--- "::", an optional dotted IPv4 tail. "1.2.3.4:80" (one colon) is not one.
function _M.ipv6(a)
  if #a > 45 or not a:find("^[%x:.]+$") then return false end
  local head, tail = a, nil
  local dc = a:find("::", 1, true)
  if dc then
    if a:find("::", dc + 1, true) then return false end
    head, tail = a:sub(1, dc - 1), a:sub(dc + 2)
  end
  local groups = 0
  local function count(part, last)
    if part == "" then return true end
    local fields = {}
    for f in (part .. ":"):gmatch("([^:]*):") do fields[#fields + 1] = f end
    for i, f in ipairs(fields) do
      if last and i == #fields and f:find(".", 1, true) then
        if not _M.ipv4(f) then return false end
        groups = groups + 2
      elseif f:find("^%x%x?%x?%x?$") then
        groups = groups + 1
      else
        return false
      end
    end
    return true
  end
  if tail == nil then
    return count(head, true) and groups == 8
  end
  if head:find("%.") then return false end
  return count(head, false) and count(tail, true) and groups <= 7
end

--- hash_key checks a chash key: `$name` variables and the literals [%w_.:/-] only.
function _M.hash_key(k)
  if type(k) ~= "string" or #k < 1 or #k > 255 then return false end
  if k:find("[^%w_.:/%$%-]") then return false end
  -- every "$" starts a variable name
  if k:find("%$[^%w_]") or k:sub(-1) == "$" then return false end
  return true
end

local function peer(e)
  if type(e) ~= "table" then return "not an object" end
  local ok, extra = only_keys(e, { address = true, port = true })
  if not ok then return "unknown field " .. short(extra) end
  local a, p = e.address, e.port
  if type(a) ~= "string" or not (_M.ipv4(a) or _M.ipv6(a)) then
    return "address " .. short(a) .. " is not an IPv4 or IPv6 address"
  end
  if type(p) ~= "number" or p ~= math.floor(p) or p < 1 or p > 65535 then
    return "port " .. short(p) .. " is not 1..65535"
  end
  return nil
end

local function backend(b)
  if type(b) ~= "table" or is_array(b) and next(b) ~= nil then return "not an object" end
  local ok, extra = only_keys(b, { name = true, balance = true, hashKey = true, endpoints = true })
  if not ok then return "unknown field " .. short(extra) end
  if b.hashKey == null then b.hashKey = nil end
  if b.balance == nil or not METHODS[b.balance] then
    return "balance " .. short(b.balance) .. " is not round_robin, ewma, chash or sticky"
  end
  if b.hashKey ~= nil and not _M.hash_key(b.hashKey) then
    return "hashKey " .. short(b.hashKey) .. " is not $variables and [A-Za-z0-9_.:/-]"
  end
  if (b.balance == "chash" or b.balance == "sticky") and b.hashKey == nil then
    return b.balance .. " needs a hashKey"
  end
  if not is_array(b.endpoints) then return "endpoints is not an array" end
  for i, e in ipairs(b.endpoints) do
    local why = peer(e)
    if why then return "endpoint " .. i .. ": " .. why end
  end
  return nil
end

--- backends decodes and checks a BackendTable; returns the table, or nil and a one-line reason.
function _M.backends(body)
  local t = cjson.decode(body)
  if type(t) ~= "table" then return nil, "the body is not a JSON object" end
  local ok, extra = only_keys(t, { version = true, backends = true })
  if not ok then return nil, "unknown field " .. short(extra) end
  if not _M.version(t.version) then return nil, "version is not 1..128 of [A-Za-z0-9_.:-]" end
  if not is_array(t.backends) then return nil, "backends is not an array" end
  local seen = {}
  for i, b in ipairs(t.backends) do
    local name = type(b) == "table" and b.name or nil
    if type(name) ~= "string" or #name > 255 or not name:find("^[%w_.%-]+$") then
      return nil, "backend " .. i .. ": name " .. short(name) .. " is not 1..255 of [A-Za-z0-9_.-]"
    end
    if seen[name] then return nil, "backend " .. name .. ": named twice" end
    seen[name] = true
    local why = backend(b)
    if why then return nil, "backend " .. name .. ": " .. why end
  end
  return t
end

--- certificates decodes and checks a CertificateTable, parsing every PEM; nil and a reason when not.
function _M.certificates(body)
  local ssl = require("ngx.ssl")
  local t = cjson.decode(body)
  if type(t) ~= "table" then return nil, "the body is not a JSON object" end
  local ok, extra = only_keys(t, { version = true, certificates = true })
  if not ok then return nil, "unknown field " .. short(extra) end
  if not _M.version(t.version) then return nil, "version is not 1..128 of [A-Za-z0-9_.:-]" end
  if not is_array(t.certificates) then return nil, "certificates is not an array" end
  local seen = {}
  for i, c in ipairs(t.certificates) do
    if type(c) ~= "table" then return nil, "certificate " .. i .. ": not an object" end
    local host = c.host
    if type(host) ~= "string" or #host > 253 or host ~= host:lower()
      or not (host:find("^[%w.%-]+$") or host:find("^%*%.[%w.%-]+$")) then
      return nil, "certificate " .. i .. ": host " .. short(host) .. " is not a lowercase host or *.host"
    end
    local where = "certificate " .. host .. ": "
    if seen[host] then return nil, where .. "host named twice" end
    seen[host] = true
    local fine, extra2 = only_keys(c, { host = true, cert = true, key = true })
    if not fine then return nil, where .. "unknown field " .. short(extra2) end
    -- never echo PEM content: reasons name the field only
    if type(c.cert) ~= "string" or c.cert:sub(1, 10) ~= "-----BEGIN" or not ssl.parse_pem_cert(c.cert) then
      return nil, where .. "cert is not a PEM certificate chain"
    end
    if type(c.key) ~= "string" or c.key:sub(1, 10) ~= "-----BEGIN" or not ssl.parse_pem_priv_key(c.key) then
      return nil, where .. "key is not a PEM private key"
    end
  end
  return t
end

return _M
