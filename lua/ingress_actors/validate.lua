-- The shape checks of pushed tables, against the bounds and sets of schema.lua (generated from the model's
-- src/model/table-schema.ts, which checks every entry against the same before pushing). This is the
-- second line: an entry that is not exactly the contract's shape is refused (alone: see isolate), so
-- nothing a Kubernetes object carried can become something else than data here.
local cjson = require("cjson.safe")
-- the bounds and closed sets, generated from src/model/table-schema.ts: the model checks entries against the same
local schema = require("ingress_actors.schema")
local L = schema.limits

local _M = {}

local null = cjson.null
local METHODS = schema.balance

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

--- short is a value as a reason or a log line may name it.
_M.short = short
--- MAX_REFUSED is how many refused entries one answer names at most
_M.MAX_REFUSED = 1000

--- answer is a push's answer body: the version now held and the refused entries, an array even when empty (cjson
--- would write {})
function _M.answer(version, refused)
  local body = cjson.encode({ version = version, refused = #refused > 0 and refused or "[]" })
  return (body:gsub('"refused":"%[%]"', '"refused":[]'))
end

--- is_array, only_keys and the bounds, for the keyed tables' pushes (keyed.lua)
_M.is_array, _M.only_keys, _M.limits = is_array, only_keys, L

--- version checks a table's version string.
function _M.version(v)
  return type(v) == "string" and #v >= 1 and #v <= L.version and v:find("^[%w_.:%-]+$") ~= nil
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
  if type(k) ~= "string" or #k < 1 or #k > L.hashKey then return false end
  if k:find("[^%w_.:/%$%-]") then return false end
  -- every "$" starts a variable name
  if k:find("%$[^%w_]") or k:sub(-1) == "$" then return false end
  return true
end

local function int_in(v, lo, hi)
  return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi
end

local function backend_name(v)
  return type(v) == "string" and #v <= L.backendName and v:find("^[%w_.%-]+$") ~= nil
end

-- envelope decodes a pushed table and checks what every table has: only {version, <list>}, the
-- version, and the list an array; returns the table, or nil and a one-line reason
local function envelope(body, list)
  local t = cjson.decode(body)
  if type(t) ~= "table" then return nil, "the body is not a JSON object" end
  local ok, extra = only_keys(t, { version = true, [list] = true })
  if not ok then return nil, "unknown field " .. short(extra) end
  if not _M.version(t.version) then return nil, "version is not 1.." .. L.version .. " of [A-Za-z0-9_.:-]" end
  if not is_array(t[list]) then return nil, list .. " is not an array" end
  return t
end

local function peer(e)
  if type(e) ~= "table" then return "not an object" end
  local ok, extra = only_keys(e, { address = true, port = true })
  if not ok then return "unknown field " .. short(extra) end
  local a, p = e.address, e.port
  if type(a) ~= "string" or not (_M.ipv4(a) or _M.ipv6(a)) then
    return "address " .. short(a) .. " is not an IPv4 or IPv6 address"
  end
  if not int_in(p, 1, 65535) then
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

-- Entry isolation: a table is applied entry by entry. An entry that fails its check is refused alone (its key and
-- reason go back to the controller, which holds the objects that made it); in its place the entry of the same key
-- from the table in force stays (`previous()`, decoded only when something was refused), or none. Only what cannot
-- be read entry by entry (not JSON, not {version, <list>}) refuses the whole table.

-- the refused entries one answer names at most (the controller never sends an entry it knows nginx refuses: these
-- are what only nginx can judge, such as a key its OpenSSL cannot read)
local MAX_REFUSED = _M.MAX_REFUSED

-- refusal is one refused entry as the answer names it
-- (a key that passed its check as is, for the controller to find its objects by; it goes out as JSON data only)
local function refusal(refused, tbl, key, reason)
  if #refused >= MAX_REFUSED then return end
  refused[#refused + 1] = { table = tbl, key = #key <= 640 and key or short(key), reason = reason }
end

-- by_key indexes the previous table's list by key_of(entry), a field's name or a function
local function by_key(previous, list, key_of)
  local index = {}
  local entries = type(previous) == "table" and previous[list]
  if type(entries) ~= "table" then return index end
  for _, e in ipairs(entries) do
    if type(e) == "table" then
      local k
      if type(key_of) == "function" then k = key_of(e) else k = e[key_of] end
      if k ~= nil then index[k] = e end
    end
  end
  return index
end

-- isolate checks each entry of t[list] with check(entry, i) -> key, reason|nil: a refused one is replaced by the
-- previous table's entry of that key (keyed by key_of), if any; a key given twice is refused the second time
local function isolate(t, tbl, list, check, previous, key_of)
  local kept, refused, seen, before = {}, {}, {}, nil
  for i, e in ipairs(t[list]) do
    local key, why = check(e, i)
    if why == nil and seen[key] then why = "named twice" end
    if why == nil then
      kept[#kept + 1] = e
      seen[key] = true
    else
      refusal(refused, tbl, key, why)
      before = before or by_key(previous(), list, key_of)
      local old = not seen[key] and before[key]
      if old then
        kept[#kept + 1] = old
        seen[key] = true
      end
    end
  end
  t[list] = kept
  return t, refused
end

--- backend_name is true for a Backend's name (its key in the keyed backends table).
_M.backend_name = backend_name

--- backend checks one Backend whose name passed backend_name: nil, or a one-line reason.
_M.backend = backend

-- server_key: a Gateway server's key, <port>/<host>, or <address>:<port>/<host> for a Gateway on its own
-- address (--gateway-addresses)
local function server_key(key)
  return type(key) == "string" and #key <= L.serverKey
    and (key:find("^%d+/[%w.%-%*_]+$") or key:find("^[%x.:]+:%d+/[%w.%-%*_]+$")) ~= nil
end

local function host_name(host)
  return type(host) == "string" and #host <= L.host and host == host:lower()
    and (host:find("^[%w.%-]+$") or host:find("^%*%.[%w.%-]+$")) ~= nil
end

local function secret_name(v)
  return type(v) == "string" and #v <= L.secret
    and (v:find("^[a-z0-9.%-]+/[a-z0-9.%-]+$") or v:find("^[a-z0-9.%-]+/[a-z0-9.%-]+#%d%d?%d?%d?$")) ~= nil
end

-- names checks an entry's hosts or servers: an array of names `ok` takes (keyed.lua serves each by one entry)
local function names(list, what, ok)
  if not is_array(list) then return what .. " is not an array" end
  for i, n in ipairs(list) do
    if not ok(n) then return what .. " " .. i .. ": " .. short(n) .. " is not a name" end
  end
  return nil
end

--- secret_name is true for a certificate entry's key: the Secret's <namespace>/<name>.
_M.secret_name = secret_name

--- certificate checks a Secret's entry whose secret passed secret_name: its fields, the hosts and Gateway server keys
--- served with it, and its PEM, which nginx's OpenSSL must read (never echoed: reasons name the field only). Nil, or a
--- one-line reason.
function _M.certificate(c)
  local ssl = require("ngx.ssl")
  local fine, extra = only_keys(c, { secret = true, cert = true, key = true, hosts = true, servers = true })
  if not fine then return "unknown field " .. short(extra) end
  local why = names(c.hosts, "host", host_name) or names(c.servers, "server", server_key)
  if why then return why end
  if type(c.cert) ~= "string" or #c.cert > L.pem or c.cert:sub(1, 10) ~= "-----BEGIN" or not ssl.parse_pem_cert(c.cert) then
    return "cert is not a PEM certificate chain"
  end
  if type(c.key) ~= "string" or #c.key > L.pem or c.key:sub(1, 10) ~= "-----BEGIN" or not ssl.parse_pem_priv_key(c.key) then
    return "key is not a PEM private key nginx's OpenSSL reads"
  end
  return nil
end

-- Route tables: every string is data the router compares or copies into a header; the checks
-- below keep them to the characters the controller's validators allow, so nothing else gets by.
local PATH_TYPES = schema.pathTypes
local VALUE_TYPES = schema.valueTypes
local MODIFIER_TYPES = schema.modifierTypes
local METHOD_NAMES = schema.methods
local REDIRECT_CODES = schema.redirectCodes

-- text is a string of 1..max characters without control characters (0..max when empty_ok)
local function text(v, max, empty_ok)
  return type(v) == "string" and #v <= max and (empty_ok or #v >= 1) and not v:find("[%c]")
end

local function header_name(v)
  return type(v) == "string" and #v >= 1 and #v <= L.headerName and v:find("^[%w!#%%&'*+.^_`|~%-]+$") ~= nil
end

local function hostname(v)
  return type(v) == "string" and #v >= 1 and #v <= L.host and v:find("^[%w.%-]+$") ~= nil
end

local function path_value(v)
  return text(v, L.path) and v:sub(1, 1) == "/"
end

local function value_matches(list, what)
  if not is_array(list) then return what .. " is not an array" end
  for i, m in ipairs(list) do
    if type(m) ~= "table" then return what .. " " .. i .. ": not an object" end
    local ok, extra = only_keys(m, { type = true, name = true, value = true })
    if not ok then return what .. " " .. i .. ": unknown field " .. short(extra) end
    if not VALUE_TYPES[m.type] then return what .. " " .. i .. ": type " .. short(m.type) .. " is not Exact or RegularExpression" end
    if not header_name(m.name) then return what .. " " .. i .. ": name " .. short(m.name) .. " is not a token" end
    if not text(m.value, L.value, m.type == "Exact") then return what .. " " .. i .. ": value is not 0.." .. L.value .. " plain characters" end
  end
  return nil
end

local function pairs_list(list, what)
  if not is_array(list) then return what .. " is not an array" end
  for i, p in ipairs(list) do
    if type(p) ~= "table" or not only_keys(p, { name = true, value = true }) then return what .. " " .. i .. ": not {name, value}" end
    if not header_name(p.name) then return what .. " " .. i .. ": name " .. short(p.name) .. " is not a token" end
    if not text(p.value, L.value, true) then return what .. " " .. i .. ": value is not 0.." .. L.value .. " plain characters" end
  end
  return nil
end

local function path_modifier(p)
  if p == nil then return nil end
  if type(p) ~= "table" or not only_keys(p, { type = true, value = true }) then return "path is not {type, value}" end
  if not MODIFIER_TYPES[p.type] then return "path type " .. short(p.type) .. " is not ReplaceFullPath or ReplacePrefixMatch" end
  if not path_value(p.value) then return "path value is not an absolute path" end
  return nil
end

local FILTER_KEYS = {
  RequestHeaderModifier = { type = true, set = true, add = true, remove = true },
  ResponseHeaderModifier = { type = true, set = true, add = true, remove = true },
  RequestRedirect = { type = true, scheme = true, hostname = true, port = true, path = true, statusCode = true },
  URLRewrite = { type = true, hostname = true, path = true },
  RequestMirror = { type = true, backend = true, percent = true },
  CORS = { type = true, allowOrigins = true, allowCredentials = true, allowMethods = true, allowHeaders = true,
    exposeHeaders = true, maxAge = true },
}

-- cors_origin: "*" or scheme://host[:port] in lower case, the host "*" or DNS characters after an optional "*."
local function cors_origin(v)
  if v == "*" then return true end
  if type(v) ~= "string" or #v > L.corsOrigin then return false end
  local host, port = v:match("^https?://([^:/]+)(.*)$")
  if host == nil then return false end
  if port ~= "" and not port:find("^:%d%d?%d?%d?%d?$") then return false end
  if host == "*" then return true end
  if host:sub(1, 2) == "*." then host = host:sub(3) end
  return host:find("^[a-z0-9.%-]+$") ~= nil
end

-- cors_list: an array of at most `max` entries that `ok` takes, with "*" only alone
local function cors_list(list, max, ok, what)
  if not is_array(list) or #list > max then return what .. " is not an array of at most " .. max end
  for i, v in ipairs(list) do
    if not ok(v) then return what .. " " .. i .. ": " .. short(v) .. " is not allowed" end
    if v == "*" and #list > 1 then return what .. ": * with others" end
  end
  return nil
end

local function cors(f)
  local why = cors_list(f.allowOrigins, L.corsOrigins, cors_origin, "allowOrigins")
    or cors_list(f.allowMethods, L.corsMethods, function(m) return schema.corsMethods[m] == true end, "allowMethods")
    or cors_list(f.allowHeaders, L.corsHeaders, function(h) return h == "*" or header_name(h) end, "allowHeaders")
    or cors_list(f.exposeHeaders, L.corsHeaders, function(h) return h == "*" or header_name(h) end, "exposeHeaders")
  if why then return why end
  if type(f.allowCredentials) ~= "boolean" then return "allowCredentials is not a boolean" end
  if not int_in(f.maxAge, 1, L.corsMaxAge) then return "maxAge is not 1.." .. L.corsMaxAge end
  return nil
end

local function filter(f)
  if type(f) ~= "table" then return "not an object" end
  local keys = FILTER_KEYS[f.type]
  if not keys then return "type " .. short(f.type) .. " is not a supported filter" end
  local ok, extra = only_keys(f, keys)
  if not ok then return "unknown field " .. short(extra) end
  if f.type == "RequestHeaderModifier" or f.type == "ResponseHeaderModifier" then
    local why = pairs_list(f.set, "set") or pairs_list(f.add, "add")
    if why then return why end
    if not is_array(f.remove) then return "remove is not an array" end
    for i, n in ipairs(f.remove) do
      if not header_name(n) then return "remove " .. i .. ": " .. short(n) .. " is not a token" end
    end
  elseif f.type == "RequestRedirect" then
    if f.scheme ~= nil and f.scheme ~= "http" and f.scheme ~= "https" then return "scheme is not http or https" end
    if f.hostname ~= nil and not hostname(f.hostname) then return "hostname " .. short(f.hostname) .. " is not a host" end
    if f.port ~= nil and not int_in(f.port, 1, 65535) then return "port is not 1..65535" end
    if not REDIRECT_CODES[f.statusCode] then return "statusCode is not 301, 302, 303, 307 or 308" end
    return path_modifier(f.path)
  elseif f.type == "URLRewrite" then
    if f.hostname ~= nil and not hostname(f.hostname) then return "hostname " .. short(f.hostname) .. " is not a host" end
    return path_modifier(f.path)
  elseif f.type == "RequestMirror" then
    if f.backend ~= nil and not backend_name(f.backend) then return "backend " .. short(f.backend) .. " is not a name" end
    if type(f.percent) ~= "number" or f.percent < 0 or f.percent > 100 then return "percent is not 0..100" end
  elseif f.type == "CORS" then
    return cors(f)
  end
  return nil
end

local function route(r)
  if type(r) ~= "table" then return "not an object" end
  local ok, extra = only_keys(r, { route = true, path = true, method = true, headers = true, queryParams = true,
    filters = true, backends = true, timeouts = true, grpc = true })
  if not ok then return "unknown field " .. short(extra) end
  if r.grpc ~= nil and r.grpc ~= true then return "grpc is not true" end
  if not text(r.route, L.routeLabel) then return "route is not a name" end
  local p = r.path
  if type(p) ~= "table" or not only_keys(p, { type = true, value = true }) then return "path is not {type, value}" end
  if not PATH_TYPES[p.type] then return "path type " .. short(p.type) .. " is not Exact, PathPrefix or RegularExpression" end
  if p.type ~= "RegularExpression" and not path_value(p.value) then return "path value is not an absolute path" end
  if p.type == "RegularExpression" then
    if not text(p.value, L.path) then return "path regex is not 1.." .. L.path .. " characters" end
    local _, _, err = ngx.re.find("", "^(?:" .. p.value .. ")$", "jo")
    if err then return "path regex does not compile" end
  end
  if r.method ~= nil and not METHOD_NAMES[r.method] then return "method " .. short(r.method) .. " is not an HTTP method" end
  local why = value_matches(r.headers, "header") or value_matches(r.queryParams, "queryParam")
  if why then return why end
  for _, list in ipairs({ r.headers, r.queryParams }) do
    for _, m in ipairs(list) do
      if m.type == "RegularExpression" then
        local _, _, err = ngx.re.find("", "^(?:" .. m.value .. ")$", "jo")
        if err then return "regex of " .. short(m.name) .. " does not compile" end
      end
    end
  end
  if not is_array(r.filters) then return "filters is not an array" end
  local mirrors = 0
  for i, f in ipairs(r.filters) do
    local why2 = filter(f)
    if why2 then return "filter " .. i .. ": " .. why2 end
    if f.type == "RequestMirror" then mirrors = mirrors + 1 end
  end
  -- nginx.conf has this many mirror slots per Gateway location
  if mirrors > L.mirrors then return "more than " .. L.mirrors .. " RequestMirror filters" end
  if not is_array(r.backends) then return "backends is not an array" end
  for i, b in ipairs(r.backends) do
    if type(b) ~= "table" or not only_keys(b, { backend = true, weight = true, filters = true, tls = true, sni = true }) then return "backend " .. i .. ": not {backend, weight, filters, tls, sni}" end
    if b.filters ~= nil then
      -- a backendRef's own filters: RequestHeaderModifier only
      if not is_array(b.filters) then return "backend " .. i .. ": filters is not an array" end
      for j, f in ipairs(b.filters) do
        if type(f) ~= "table" or f.type ~= "RequestHeaderModifier" then return "backend " .. i .. ": filter " .. j .. " is not a RequestHeaderModifier" end
        local why2 = filter(f)
        if why2 then return "backend " .. i .. ": filter " .. j .. ": " .. why2 end
      end
    end
    if b.backend ~= nil and not backend_name(b.backend) then return "backend " .. i .. ": " .. short(b.backend) .. " is not a name" end
    -- BackendTLSPolicy: tls names the profile location @ia_btls_<tls> of nginx.conf, sni the name sent and verified
    if (b.tls == nil) ~= (b.sni == nil) then return "backend " .. i .. ": tls and sni go together" end
    if b.tls ~= nil and not (type(b.tls) == "string" and b.tls:find("^%x+$") and #b.tls == 16) then return "backend " .. i .. ": tls is not 16 hex digits" end
    if b.sni ~= nil and not (host_name(b.sni) and b.sni:sub(1, 1) ~= "*") then return "backend " .. i .. ": sni is not a host name" end
    if not int_in(b.weight, 0, L.weight) then return "backend " .. i .. ": weight is not 0.." .. L.weight end
  end
  local t = r.timeouts
  if type(t) ~= "table" or not only_keys(t, { request = true, backendRequest = true }) then return "timeouts is not {request, backendRequest}" end
  for _, k in ipairs({ "request", "backendRequest" }) do
    if t[k] ~= nil and not int_in(t[k], 0, L.timeoutMs) then return "timeouts." .. k .. " is not milliseconds" end
  end
  return nil
end

-- label is a route entry's rule label, or its place when it has none to trust
local function label_of(r, j)
  if type(r) == "table" and text(r.route, L.routeLabel) then return r.route end
  return "#" .. j
end

-- kept_routes are a server's routes with the rules in `bad` (label -> true) replaced by the previous server's
-- entries of that rule, in the place of the rule's first entry (none when the previous server had none)
local function kept_routes(routes, bad, old)
  local kept, placed = {}, {}
  for j, r in ipairs(routes) do
    local label = label_of(r, j)
    if not bad[label] then
      kept[#kept + 1] = r
    elseif not placed[label] then
      placed[label] = true
      if type(old) == "table" and type(old.routes) == "table" then
        for _, o in ipairs(old.routes) do
          if type(o) == "table" and o.route == label then kept[#kept + 1] = o end
        end
      end
    end
  end
  return kept
end

-- listener_host: a listener's hostname as the router compares it: "" (none), a lowercase host or "*." and one
local function listener_host(v)
  if type(v) ~= "string" or #v > L.host then return false end
  return v == "" or v:find("^[a-z0-9.%-]+$") ~= nil or v:find("^%*%.[a-z0-9.%-]+$") ~= nil
end

local function tls_listeners(t)
  if type(t) ~= "table" or not only_keys(t, { listener = true, listeners = true }) then return "not {listener, listeners}" end
  if not listener_host(t.listener) then return "listener " .. short(t.listener) .. " is not a hostname" end
  if not is_array(t.listeners) or #t.listeners > L.tlsListeners then return "listeners is not an array of at most " .. L.tlsListeners end
  for i, h in ipairs(t.listeners) do
    if not listener_host(h) then return "listener " .. i .. " is not a hostname" end
  end
  return nil
end

--- routes decodes and checks a RouteTable entry by entry (as backends): a server whose own fields fail is refused
--- whole; within a server, the entries of one rule (its label `namespace/name#rule`) stand or fall together.
function _M.routes(body, previous)
  local t, why = envelope(body, "servers")
  if t == nil then return nil, why end
  local in_servers, before = {}, nil
  local function server_entry(s, i)
    if type(s) ~= "table" then return "#" .. i, "not an object" end
    local key = s.key
    if not server_key(key) then return "#" .. i, "key " .. short(key) .. " is not [<address>:]<port>/<host>" end
    local fine, extra = only_keys(s, { key = true, port = true, routes = true, tls = true })
    if not fine then return key, "unknown field " .. short(extra) end
    if not int_in(s.port, 1, 65535) then return key, "port is not 1..65535" end
    if s.tls ~= nil then
      local why = tls_listeners(s.tls)
      if why then return key, "tls: " .. why end
    end
    if not is_array(s.routes) then return key, "routes is not an array" end
    local bad = nil
    for j, r in ipairs(s.routes) do
      local why2 = route(r)
      local label = label_of(r, j)
      if why2 and not (bad and bad[label]) then
        bad = bad or {}
        bad[label] = true
        refusal(in_servers, "routes", key .. " " .. label, "route " .. j .. ": " .. why2)
      end
    end
    if bad then
      before = before or by_key(previous(), "servers", "key")
      s.routes = kept_routes(s.routes, bad, before[key])
    end
    return key, nil
  end
  local refused
  t, refused = isolate(t, "routes", "servers", server_entry, previous, "key")
  for _, r in ipairs(in_servers) do refused[#refused + 1] = r end
  return t, refused
end

-- Ingress routes (POST /ingress-routes): one host's entries are checked alone, and stored under the host's own key.

local INGRESS_KINDS = schema.ingressKinds
-- the options ingress_router.lua compiles each kind with, without "o": a check must not fill the worker's regex cache
local COMPILE_OPTIONS = { regex = "", iregex = "i" }

-- dns_label: a DNS-1123 label (a namespace, an IANA port name's alphabet): [a-z0-9-], alphanumeric at both ends
local function dns_label(v, max)
  return type(v) == "string" and #v >= 1 and #v <= max and v:find("^[a-z0-9]$") ~= nil
    or type(v) == "string" and #v >= 2 and #v <= max and v:find("^[a-z0-9][a-z0-9%-]*[a-z0-9]$") ~= nil
end

-- dns_subdomain: DNS-1123 labels of at most 63 joined by dots, at most `max` in all; one pass over the labels
local function dns_subdomain(v, max)
  if type(v) ~= "string" or #v < 1 or #v > max or not v:find("^[a-z0-9.%-]+$") then return false end
  if v:byte(1) == 46 or v:byte(-1) == 46 or v:find("..", 1, true) then return false end
  for label in v:gmatch("[^.]+") do
    if not dns_label(label, 63) then return false end
  end
  return true
end

--- ingress_host is true for an Ingress route table's host: `_`, a lowercase DNS name, or `*.` and one.
function _M.ingress_host(v)
  if v == "_" then return true end
  if type(v) ~= "string" then return false end
  if v:sub(1, 2) == "*." then return #v <= L.host and dns_subdomain(v:sub(3), L.host - 2) end
  return dns_subdomain(v, L.host)
end

-- service_port: a port number 1..65535 as written, or an IANA service name (at most 15 of [a-z0-9-], a letter in
-- it, no "--"); empty when the Ingress named none the model could check (infoOf)
local function service_port(v)
  if v == "" then return true end
  if type(v) ~= "string" then return false end
  if v:find("^[1-9]%d?%d?%d?%d?$") then return tonumber(v) <= 65535 end
  return dns_label(v, 15) and v:find("%l") ~= nil and not v:find("--", 1, true)
end

-- one_line is what a refusal can say of a message from elsewhere (PCRE's): printable, one short line
local function one_line(s)
  s = tostring(s):gsub("%c", " ")
  if #s > 200 then s = s:sub(1, 200) .. "..." end
  return s
end

local function ingress_info(info)
  if type(info) ~= "table" then return "info is not an object" end
  local ok, extra = only_keys(info, { namespace = true, ingressName = true, serviceName = true, servicePort = true })
  if not ok then return "info: unknown field " .. short(extra) end
  if not dns_label(info.namespace, 63) then return "info.namespace " .. short(info.namespace) .. " is not a DNS label" end
  if not dns_subdomain(info.ingressName, 253) then
    return "info.ingressName " .. short(info.ingressName) .. " is not a DNS subdomain"
  end
  if info.serviceName ~= "" and not dns_subdomain(info.serviceName, 253) then
    return "info.serviceName " .. short(info.serviceName) .. " is not a DNS subdomain"
  end
  if not service_port(info.servicePort) then
    return "info.servicePort " .. short(info.servicePort) .. " is not 1..65535 or a port name"
  end
  return nil
end

local INGRESS_ENTRY_FIELDS = { kind = true, path = true, profile = true, route = true, upstream = true, info = true,
  maxBodySize = true, autoRedirect = true, internal = true }

local function ingress_entry(e)
  if type(e) ~= "table" or is_array(e) and next(e) ~= nil then return "not an object" end
  local ok, extra = only_keys(e, INGRESS_ENTRY_FIELDS)
  if not ok then return "unknown field " .. short(extra) end
  local kind, path = e.kind, e.path
  if type(kind) ~= "string" or not INGRESS_KINDS[kind] then
    return "kind " .. short(kind) .. " is not exact, prefix, regex or iregex"
  end
  if not text(path, L.path) then return "path is not 1.." .. L.path .. " characters without control characters" end
  if kind == "exact" or kind == "prefix" then
    if path:byte(1) ~= 47 then return "path " .. short(path) .. " does not start with /" end
    if kind == "prefix" and path:byte(-1) ~= 47 then return "prefix " .. short(path) .. " does not end in /" end
  else
    local _, _, err = ngx.re.find("", path, COMPILE_OPTIONS[kind])
    if err then return "regex " .. short(path) .. " does not compile: " .. one_line(err) end
  end
  local profile = e.profile
  if type(profile) ~= "string" or #profile ~= L.profile or profile:find("[^0-9a-f]") then
    return "profile " .. short(profile) .. " is not " .. L.profile .. " lowercase hex digits"
  end
  local route = e.route
  if route ~= nil and (type(route) ~= "string" or #route < 1 or #route > L.routeId or route:find("[^0-9a-f]")) then
    return "route " .. short(route) .. " is not 1.." .. L.routeId .. " lowercase hex digits"
  end
  if e.upstream ~= nil and not backend_name(e.upstream) then
    return "upstream " .. short(e.upstream) .. " is not 1.." .. L.backendName .. " of [A-Za-z0-9_.-]"
  end
  if e.info ~= nil then
    local why = ingress_info(e.info)
    if why then return why end
  end
  local max = e.maxBodySize
  if max ~= nil and (type(max) ~= "number" or max < 1 or max > L.bodySize or max % 1 ~= 0) then
    return "maxBodySize " .. short(max) .. " is not a whole number of bytes from 1 to " .. L.bodySize
  end
  if type(e.autoRedirect) ~= "boolean" then return "autoRedirect is not a boolean" end
  if type(e.internal) ~= "boolean" then return "internal is not a boolean" end
  return nil
end

--- ingress_host_routes checks one IngressHostRoutes whose host passed ingress_host: nil, or a one-line reason.
function _M.ingress_host_routes(h)
  if type(h) ~= "table" then return "not an object" end
  local ok, extra = only_keys(h, { host = true, entries = true })
  if not ok then return "unknown field " .. short(extra) end
  if not is_array(h.entries) then return "entries is not an array" end
  if #h.entries > L.ingressEntries then return "more than " .. L.ingressEntries .. " entries" end
  for i, e in ipairs(h.entries) do
    local why = ingress_entry(e)
    if why then return "entry " .. i .. ": " .. why end
  end
  return nil
end

return _M
