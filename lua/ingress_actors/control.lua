-- The control channel's handlers (content_by_lua on the private unix socket): the controller
-- pushes tables here instead of reloading. A push is checked whole before it replaces anything,
-- so a refused push leaves the previous table serving.
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

-- push stores a checked table: the raw JSON first, then its version, so a worker that sees the
-- new version reads the new table (or a newer one; it decodes again when versions differ).
local function push(kind, check)
  if not allowed("POST") then return end
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if body == nil then
    -- a body nginx wrote to a file is over client_body_buffer_size: never read from disk
    if ngx.req.get_body_file() ~= nil then return refuse(413, "the body is over the in-memory buffer") end
    return refuse(400, "the body is empty")
  end
  local t, why = check(body)
  if not t then
    ngx.log(ngx.WARN, "ingress-actors: refused a ", kind, " push: ", why)
    return refuse(400, why)
  end
  local dict = ngx.shared.ia_config
  -- safe_set never evicts the other table to make room
  local ok, err = dict:safe_set(kind, body)
  if ok then ok, err = dict:safe_set(kind .. "_version", t.version) end
  if not ok then
    ngx.log(ngx.ERR, "ingress-actors: could not store the ", kind, " table: ", err)
    return refuse(507, "lua_shared_dict ia_config: " .. tostring(err))
  end
  local n = #(t.backends or t.certificates or t.servers)
  ngx.log(ngx.NOTICE, "ingress-actors: ", kind, " table ", t.version, " in force (", n, " entries)")
  return answer(201, cjson.encode({ version = t.version }), true)
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

--- status handles GET /status: the versions nginx holds, null before the first push.
function _M.status()
  if not allowed("GET") then return end
  local dict = ngx.shared.ia_config
  return answer(200, cjson.encode({
    backends = dict:get("backends_version") or cjson.null,
    certificates = dict:get("certificates_version") or cjson.null,
    routes = dict:get("routes_version") or cjson.null,
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
