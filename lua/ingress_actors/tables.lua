-- Each worker's decoded view of the pushed tables. The backends and certificates are stored entry by entry
-- (keyed.lua): a worker decodes an entry when it first needs it and again only when a push changed it. The Gateway
-- API's routes are stored whole, with their version; a worker decodes them again only when the version moved,
-- checked on every lookup, so a push is seen by every worker on its next request.
local cjson = require("cjson.safe")
local keyed = require("ingress_actors.keyed")

local _M = {}

local dict = ngx.shared.ia_config

-- the Gateway routes this worker decoded: their version, and the servers by key
local routes = { version = nil, by_key = {} }

-- route_servers are the stored routes' servers by key, decoded again when the version moved; when nothing decodable
-- is stored (first start, or unreadable), what this worker had
local function route_servers()
  local version = dict:get("routes_version")
  if version == routes.version then return routes.by_key end
  routes.version = version
  local raw = dict:get("routes")
  local t = raw and cjson.decode(raw)
  if type(t) ~= "table" or type(t.servers) ~= "table" then
    if raw ~= nil then ngx.log(ngx.ERR, "ingress-actors: the stored routes table does not decode") end
    return routes.by_key
  end
  local by_key = {}
  for _, server in ipairs(t.servers) do
    if server.key ~= nil then by_key[server.key] = server end
  end
  routes.by_key = by_key
  return by_key
end

local backends = keyed.reader(dict, "backends", "b")
-- a certificate entry keeps its parsed PEM (certificate.lua) for as long as its stamp stays
local certificates = keyed.reader(dict, "certificates", "c")

--- backend is the pushed Backend named `name`, or nil.
function _M.backend(name)
  return backends.get(name)
end

--- certificate is the pushed ServedCertificate (a Secret's) serving exactly `host` (an Ingress TLS host), or nil.
function _M.certificate(host)
  return certificates.find("ch", host)
end

--- server_certificate is the pushed ServedCertificate serving the Gateway server keyed `key`, or nil.
function _M.server_certificate(key)
  return certificates.find("cv", key)
end

--- decoded is how many backends and certificates this worker has decoded, "<backends> <certificates>" (tests)
function _M.decoded()
  return backends.decoded() .. " " .. certificates.decoded()
end

--- route_server is the pushed RouteServer whose key is `key` (`<port>/<hostname or _>`), or nil.
function _M.route_server(key)
  return route_servers()[key]
end

return _M
