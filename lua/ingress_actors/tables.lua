-- Each worker's decoded view of the pushed tables. The shared dict holds the raw JSON and its
-- version; a worker decodes again only when the version moved, checked on every lookup, so a
-- push is seen by every worker on its next request.
local cjson = require("cjson.safe")

local _M = {}

local dict = ngx.shared.ia_config

-- kind -> { version = string|nil, by_key = { [key] = entry }, version_key = the dict key of its version }
local cache = {
  backends = { version = nil, by_key = {}, version_key = "backends_version" },
  certificates = { version = nil, by_key = {}, version_key = "certificates_version" },
  routes = { version = nil, by_key = {}, version_key = "routes_version" },
}

local function index(kind, list_field, key_field)
  local c = cache[kind]
  -- the key is spelled once, not joined on every lookup (every request looks up one or two tables)
  local version = dict:get(c.version_key)
  if version == c.version then return c.by_key end
  local raw = dict:get(kind)
  local t = raw and cjson.decode(raw)
  if type(t) ~= "table" or type(t[list_field]) ~= "table" then
    -- nothing stored (first start) or unreadable: keep what this worker had
    if raw ~= nil then ngx.log(ngx.ERR, "ingress-actors: the stored ", kind, " table does not decode") end
    c.version = version
    return c.by_key
  end
  local by_key = {}
  for _, entry in ipairs(t[list_field]) do
    by_key[entry[key_field]] = entry
  end
  c.by_key, c.version = by_key, version
  return by_key
end

--- backend is the pushed Backend named `name`, or nil.
function _M.backend(name)
  return index("backends", "backends", "name")[name]
end

--- certificate is the pushed ServedCertificate for exactly `host`, or nil.
function _M.certificate(host)
  return index("certificates", "certificates", "host")[host]
end

--- route_server is the pushed RouteServer whose key is `key` (`<port>/<hostname or _>`), or nil.
function _M.route_server(key)
  return index("routes", "servers", "key")[key]
end

return _M
