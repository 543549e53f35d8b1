-- The control channel's handlers (content_by_lua on the private unix socket): the controller
-- pushes tables here instead of reloading. A push is checked entry by entry: a refused entry keeps
-- its previous value (or stays absent) and is named in the answer; every other entry is applied.
local cjson = require("cjson.safe")
local init = require("ingress_actors.init")
local validate = require("ingress_actors.validate")
local monitor = require("ingress_actors.monitor")

local _M = {}

local HEADER = "x-ingress-actors-token"
local byte = string.byte
local bxor, bor = bit.bxor, bit.bor

-- same_token compares without stopping at the first difference
local function same_token(given, token)
  if type(given) ~= "string" or token == nil or #given ~= #token then return false end
  local diff = 0
  for i = 1, #token do
    diff = bor(diff, bxor(byte(given, i), byte(token, i)))
  end
  return diff == 0
end

local function answer(status, body, json)
  ngx.status = status
  ngx.header["Content-Type"] = json and "application/json" or "text/plain"
  ngx.header["Cache-Control"] = "no-store"
  ngx.say(body)
  return ngx.exit(status)
end

local function refuse(status, reason)
  return answer(status, reason)
end

-- allowed checks the method and the token; false when it answered already
local function allowed(method)
  if ngx.req.get_method() ~= method then
    ngx.header["Allow"] = method
    refuse(405, "use " .. method)
    return false
  end
  local given = ngx.req.get_headers()[HEADER]
  if not same_token(given, init.token()) then
    refuse(401, "missing or wrong " .. HEADER)
    return false
  end
  return true
end

-- body_in_memory is the request's body, or nil once it answered why there is none to read
local function body_in_memory()
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if body ~= nil then return body end
  -- a body nginx wrote to a file is over client_body_buffer_size: never read from disk
  if ngx.req.get_body_file() ~= nil then
    refuse(413, "the body is over the in-memory buffer")
  else
    refuse(400, "the body is empty")
  end
  return nil
end

-- push stores a checked table: the raw JSON first, then its version, so a worker that sees the
-- new version reads the new table (or a newer one; it decodes again when versions differ). Entries
-- that fail their check are refused alone (validate.lua): the rest is stored, under the new version,
-- and the answer names the refused ones.
local function push(kind, check)
  if not allowed("POST") then return end
  local body = body_in_memory()
  if body == nil then return end
  local dict = ngx.shared.ia_config
  -- the table in force, decoded only when an entry is refused and its previous value is wanted
  local previous
  local function in_force()
    if previous == nil then previous = cjson.decode(dict:get(kind) or "null") or false end
    return previous
  end
  local t, refused = check(body, in_force)
  if not t then
    ngx.log(ngx.WARN, "ingress-actors: refused a ", kind, " push: ", refused)
    return refuse(400, refused)
  end
  for _, r in ipairs(refused) do
    ngx.log(ngx.WARN, "ingress-actors: refused the ", kind, " entry ", validate.short(r.key), ": ", r.reason)
  end
  local stored = body
  if #refused > 0 then
    stored = cjson.encode(t)
    if stored == nil then return refuse(500, "could not encode the " .. kind .. " table") end
  end
  -- safe_set never evicts the other table to make room
  local ok, err = dict:safe_set(kind, stored)
  if ok then ok, err = dict:safe_set(kind .. "_version", t.version) end
  if not ok then
    ngx.log(ngx.ERR, "ingress-actors: could not store the ", kind, " table: ", err)
    return refuse(507, "lua_shared_dict ia_config: " .. tostring(err))
  end
  local n = #(t.backends or t.certificates or t.servers)
  ngx.log(ngx.NOTICE, "ingress-actors: ", kind, " table ", t.version, " in force (", n, " entries, ", #refused,
    " refused)")
  -- `refused` goes out as an array even when empty (cjson would write {})
  local answer_body = cjson.encode({ version = t.version, refused = #refused > 0 and refused or "[]" })
  return answer(201, (answer_body:gsub('"refused":"%[%]"', '"refused":[]')), true)
end

--- backends handles POST /backends: a BackendTable.
function _M.backends()
  return push("backends", validate.backends)
end

--- certificates handles POST /certificates: a CertificateTable.
function _M.certificates()
  return push("certificates", validate.certificates)
end

--- routes handles POST /routes: a RouteTable (the Gateway API's routes, lua/ingress_actors/router.lua).
function _M.routes()
  return push("routes", validate.routes)
end

-- The Ingress route table is stored host by host ("ih:<host>" -> the host's JSON), with its version beside it, so a
-- delta costs what it changes. ingress_router.lua reads both.
local INGRESS_VERSION = "ingress_routes_version"
-- bumped by every applied push, last: ingress_router.lua checks its decoded hosts' stamps again when it moves (not
-- the version: one may come again over other stored hosts)
local INGRESS_GENERATION = "ingress_routes_generation"
local INGRESS_HOST = "ih:"
-- "ihs:<host>" -> the generation of the push that wrote the host: a worker keeps a decoded host while it is the same
local INGRESS_STAMP = "ihs:"
-- held while a push applies, so two pushes never interleave their hosts (it expires should a worker die holding it)
local INGRESS_LOCK = "ingress_routes_lock"

-- stored_ingress_hosts lists the hosts stored now (a full replace removes those it does not name): the one walk over
-- the dict's keys, on a push that sends the whole table anyway
local function stored_ingress_hosts(dict)
  local hosts, n = {}, #INGRESS_HOST
  for _, key in ipairs(dict:get_keys(0)) do
    if key:sub(1, n) == INGRESS_HOST then hosts[#hosts + 1] = key:sub(n + 1) end
  end
  return hosts
end

-- apply_ingress_routes applies a checked push (validate.ingress_routes_push); returns the answer's status and body
local function apply_ingress_routes(dict, t)
  local held = dict:get(INGRESS_VERSION)
  if t.base ~= nil and t.base ~= held then
    return 409, "base " .. t.base .. " is not the version nginx holds (" .. tostring(held or "none") .. ")"
  end
  local refused, named, writes = {}, {}, {}
  local function refuse_host(key, reason)
    if #refused < 1000 then
      refused[#refused + 1] = { table = "ingress_routes", key = #key <= 640 and key or validate.short(key),
        reason = reason }
    end
  end
  -- what to remove first, so a host both set and removed is known when it is met in `set`
  local to_remove = {}
  for i, host in ipairs(t.remove) do
    if validate.ingress_host(host) then
      to_remove[host] = true
    else
      refuse_host("remove #" .. i, validate.short(host) .. " is not _, a lowercase DNS name or *. and one")
    end
  end
  for i, h in ipairs(t.set) do
    local host = type(h) == "table" and h.host or nil
    if not validate.ingress_host(host) then
      refuse_host("#" .. i, "host " .. validate.short(host) .. " is not _, a lowercase DNS name or *. and one")
    elseif named[host] then
      refuse_host(host, "named twice")
    else
      named[host] = true
      -- set and removed in one push: neither, it keeps what it had
      local why = to_remove[host] and "named in set and in remove" or validate.ingress_host_routes(h)
      if why == nil then
        local json = cjson.encode(h)
        if json == nil then why = "does not encode" else writes[#writes + 1] = { host, json } end
      end
      if why then refuse_host(host, why) end
    end
  end
  local removes = {}
  for host in pairs(to_remove) do
    if not named[host] then removes[#removes + 1] = host end
  end
  if t.base == nil then
    -- a full replace: every stored host it does not name goes (a refused one keeps what it had)
    for _, host in ipairs(stored_ingress_hosts(dict)) do
      if not named[host] then removes[#removes + 1] = host end
    end
  end
  -- hosts first, the version and the generation last: a worker that sees the new generation reads the new hosts; a
  -- host's JSON before its stamp (ingress_router.lua reads them the other way round)
  local generation = (dict:get(INGRESS_GENERATION) or 0) + 1
  for _, w in ipairs(writes) do
    local ok, err = dict:safe_set(INGRESS_HOST .. w[1], w[2])
    if ok then ok, err = dict:safe_set(INGRESS_STAMP .. w[1], generation) end
    if not ok then
      -- not a new JSON under an old stamp, which a worker would take for what it decoded before
      dict:delete(INGRESS_STAMP .. w[1])
      dict:delete(INGRESS_HOST .. w[1])
      -- some hosts are written, some not: no version describes that, so none is held, and the controller's next
      -- delta (base mismatch) is answered 409 until it sends the whole table
      dict:delete(INGRESS_VERSION)
      dict:incr(INGRESS_GENERATION, 1, 0)
      ngx.log(ngx.ERR, "ingress-actors: could not store the Ingress routes of ", w[1], ": ", err)
      return 507, "lua_shared_dict ia_config: " .. tostring(err)
    end
  end
  for _, host in ipairs(removes) do
    dict:delete(INGRESS_STAMP .. host)
    dict:delete(INGRESS_HOST .. host)
  end
  local ok, err = dict:safe_set(INGRESS_VERSION, t.version)
  if not ok then dict:delete(INGRESS_VERSION) end
  -- the generation moves even when the version could not be stored: the hosts were written
  dict:incr(INGRESS_GENERATION, 1, 0)
  if not ok then return 507, "lua_shared_dict ia_config: " .. tostring(err) end
  for _, r in ipairs(refused) do
    ngx.log(ngx.WARN, "ingress-actors: refused the Ingress routes of ", validate.short(r.key), ": ", r.reason)
  end
  ngx.log(ngx.NOTICE, "ingress-actors: Ingress routes ", t.version, " in force (", t.base and "delta" or "full", ", ",
    #writes, " hosts set, ", #removes, " removed, ", #refused, " refused)")
  local answer_body = cjson.encode({ version = t.version, refused = #refused > 0 and refused or "[]" })
  return 201, (answer_body:gsub('"refused":"%[%]"', '"refused":[]'))
end

--- ingress_routes handles POST /ingress-routes: {version, base, set, remove}, the Ingress route table host by host
--- (lua/ingress_actors/ingress_router.lua serves it). `base` null replaces the whole table; a version applies the
--- delta only over that version (409 otherwise, nothing changed). Hosts are checked and refused alone, named by their
--- host, or by their place (`#<n>` in set, `remove #<n>`) when the host is not one.
function _M.ingress_routes()
  if not allowed("POST") then return end
  local body = body_in_memory()
  if body == nil then return end
  local t, why = validate.ingress_routes_push(body)
  if not t then
    ngx.log(ngx.WARN, "ingress-actors: refused an Ingress routes push: ", why)
    return refuse(400, why)
  end
  local dict = ngx.shared.ia_config
  local locked, lock_err = dict:add(INGRESS_LOCK, true, 30)
  if not locked then
    return refuse(409, "another Ingress routes push is being applied (" .. tostring(lock_err) .. ")")
  end
  local ok, status, text = pcall(apply_ingress_routes, dict, t)
  dict:delete(INGRESS_LOCK)
  if not ok then
    ngx.log(ngx.ERR, "ingress-actors: an Ingress routes push failed: ", status)
    return refuse(500, "the push failed; see nginx's error log")
  end
  if status ~= 201 then
    ngx.log(ngx.WARN, "ingress-actors: refused an Ingress routes push: ", text)
    return refuse(status, text)
  end
  return answer(201, text, true)
end

--- status handles GET /status: the versions nginx holds, null before the first push.
function _M.status()
  if not allowed("GET") then return end
  local dict = ngx.shared.ia_config
  return answer(200, cjson.encode({
    backends = dict:get("backends_version") or cjson.null,
    certificates = dict:get("certificates_version") or cjson.null,
    routes = dict:get("routes_version") or cjson.null,
    ingress_routes = dict:get(INGRESS_VERSION) or cjson.null,
  }), true)
end

-- entries one GET /metrics hands over at most; the controller asks again while `left` is not 0
local DRAIN_MAX = 2000

--- metrics handles GET /metrics: the request-metric deltas the workers handed over (lua/ingress_actors/monitor.lua),
--- taken off the list, after one line `left <n> dropped <n>`.
function _M.metrics()
  if not allowed("GET") then return end
  local text, left, dropped = monitor.drain(DRAIN_MAX)
  ngx.status = 200
  ngx.header["Content-Type"] = "text/plain"
  ngx.header["Cache-Control"] = "no-store"
  ngx.print("left ", left, " dropped ", dropped, "\n", text)
  return ngx.exit(200)
end

return _M
