-- The control channel's handlers (content_by_lua on the private unix socket): the controller
-- pushes tables here instead of reloading. A push is checked entry by entry: a refused entry keeps
-- its previous value (or stays absent) and is named in the answer; every other entry is applied.
local cjson = require("cjson.safe")
local init = require("ingress_actors.init")
local validate = require("ingress_actors.validate")
local keyed = require("ingress_actors.keyed")
local monitor = require("ingress_actors.monitor")
local tracing = require("ingress_actors.tracing")

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

-- push stores a checked table (the Gateway API's routes, whole): the raw JSON first, then its version, so a worker
-- that sees the new version reads the new table (or a newer one; it decodes again when versions differ). Entries
-- that fail their check are refused alone (validate.lua): the rest is stored, under the new version, and the answer
-- names the refused ones.
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
  ngx.log(ngx.NOTICE, "ingress-actors: ", kind, " table ", t.version, " in force (", #t.servers, " entries, ", #refused,
    " refused)")
  return answer(201, validate.answer(t.version, refused), true)
end

--- routes handles POST /routes: a RouteTable (the Gateway API's routes, lua/ingress_actors/router.lua).
function _M.routes()
  return push("routes", validate.routes)
end

-- keyed_push applies POST {version, base, set, remove} to a table stored entry by entry (keyed.lua)
local function keyed_push(spec)
  if not allowed("POST") then return end
  local body = body_in_memory()
  if body == nil then return end
  local status, text = keyed.push(ngx.shared.ia_config, spec, body)
  if status ~= 201 then
    ngx.log(ngx.WARN, "ingress-actors: refused a ", spec.name, " push: ", text)
    return refuse(status, text)
  end
  return answer(201, text, true)
end

local function field(name)
  return function(e) return type(e) == "table" and e[name] or nil end
end

local function keyed_by(name, ok)
  return function(e)
    local k = field(name)(e)
    if ok(k) then return k end
    return nil
  end
end

-- The backends (balancer.lua reads them through tables.lua): "b:<name>"
local BACKENDS = {
  name = "backends", entry = "backend", prefix = "b", key_field = "name", key = keyed_by("name", validate.backend_name),
  key_ok = validate.backend_name, bad_key = "is not 1.." .. validate.limits.backendName .. " of [A-Za-z0-9_.-]",
  check = validate.backend, max = validate.limits.tableEntries,
}

-- The certificates, one entry per Secret ("c:<namespace>/<name>"), found by an Ingress host ("ch:<host>") or a
-- Gateway server's key ("cv:<key>"), each served by one Secret
local CERTIFICATES = {
  name = "certificates", entry = "certificate", prefix = "c", key_field = "secret", key = keyed_by("secret", validate.secret_name),
  key_ok = validate.secret_name, bad_key = "is not <namespace>/<name>", check = validate.certificate,
  max = validate.limits.tableEntries,
  index = { { field = "hosts", prefix = "ch", what = "host" }, { field = "servers", prefix = "cv", what = "server" } },
}

-- The Ingress route table, host by host ("ih:<host>"): ingress_router.lua reads it
local INGRESS_ROUTES = {
  name = "ingress_routes", entry = "host", prefix = "ih", key_field = "host", key = keyed_by("host", validate.ingress_host),
  key_ok = validate.ingress_host, bad_key = "is not _, a lowercase DNS name or *. and one",
  check = validate.ingress_host_routes, max = validate.limits.ingressHosts,
}

--- backends handles POST /backends: {version, base, set, remove} of Backends, keyed by name.
function _M.backends()
  return keyed_push(BACKENDS)
end

--- certificates handles POST /certificates: {version, base, set, remove} of ServedCertificates, keyed by Secret.
function _M.certificates()
  return keyed_push(CERTIFICATES)
end

--- ingress_routes handles POST /ingress-routes: {version, base, set, remove}, the Ingress route table host by host
--- (lua/ingress_actors/ingress_router.lua serves it). `base` null replaces the whole table; a version applies the
--- delta only over that version (409 otherwise, nothing changed). Hosts are checked and refused alone, named by their
--- host, or by their place (`#<n>` in set, `remove #<n>`) when the host is not one.
function _M.ingress_routes()
  return keyed_push(INGRESS_ROUTES)
end

--- status handles GET /status: the versions nginx holds, null before the first push.
function _M.status()
  if not allowed("GET") then return end
  local dict = ngx.shared.ia_config
  return answer(200, cjson.encode({
    backends = dict:get("backends_version") or cjson.null,
    certificates = dict:get("certificates_version") or cjson.null,
    routes = dict:get("routes_version") or cjson.null,
    ingress_routes = dict:get("ingress_routes_version") or cjson.null,
  }), true)
end

-- entries one GET /metrics hands over at most; the controller asks again while `left` is not 0
local DRAIN_MAX = 2000

--- answer_drained answers a GET of what the workers hand over (`drain`: monitor's or tracing's): one line
--- `left <n> dropped <n>`, then the entries taken off the list.
local function answer_drained(drain)
  if not allowed("GET") then return end
  local parts, n, left, dropped = drain(DRAIN_MAX)
  ngx.status = 200
  ngx.header["Content-Type"] = "text/plain"
  ngx.header["Cache-Control"] = "no-store"
  ngx.print("left ", left, " dropped ", dropped, "\n")
  -- each entry written before the next is copied: one output buffer is used again, rather than megabytes of them
  -- allocated and freed per answer (fresh pages each time, once the allocator gave the last ones back)
  for i = 1, n do
    ngx.print(parts[i])
    ngx.flush(true)
  end
  return ngx.exit(200)
end

--- metrics handles GET /metrics: the request-metric deltas the workers handed over (lua/ingress_actors/monitor.lua).
function _M.metrics()
  return answer_drained(monitor.drain)
end

--- spans handles GET /spans: the spans the workers handed over (lua/ingress_actors/tracing.lua), a line each, ready
--- for src/http/spans.ts.
function _M.spans()
  return answer_drained(tracing.drain)
end

return _M
