-- Each worker's decoded view of the pushed tables. The shared dict holds the raw JSON and its
-- version; a worker decodes again only when the version moved, checked on every lookup, so a
-- push is seen by every worker on its next request.
local cjson = require("cjson.safe")

local _M = {}

local dict = ngx.shared.ia_config

-- view -> { table = the dict key of the raw JSON, list = its list field, key = the entry field it is indexed by (or
--   keys = the field listing them: a certificate serves several hosts), version = string|nil,
--   by_key = { [key] = entry } }; two views may index one table by different fields
local cache = {
  backends = { table = "backends", list = "backends", key = "name", by_key = {} },
  certificates = { table = "certificates", list = "certificates", keys = "hosts", by_key = {} },
  server_certificates = { table = "certificates", list = "certificates", keys = "servers", by_key = {} },
  routes = { table = "routes", list = "servers", key = "key", by_key = {} },
}
-- the dict key of each table's version, spelled once, not joined on every lookup
for _, c in pairs(cache) do c.version_key = c.table .. "_version" end

-- table -> { version = its version, list = its decoded list }: views of one table share one decode, and its entries
local decoded = {}

-- list_of is the list of table `c.table` at `version`; nil when nothing decodable is stored (keep what was)
local function list_of(c, version)
  local d = decoded[c.table]
  if d and d.version == version then return d.list end
  local raw = dict:get(c.table)
  local t = raw and cjson.decode(raw)
  if type(t) ~= "table" or type(t[c.list]) ~= "table" then
    if raw ~= nil then ngx.log(ngx.ERR, "ingress-actors: the stored ", c.table, " table does not decode") end
    return nil
  end
  decoded[c.table] = { version = version, list = t[c.list] }
  return t[c.list]
end

local function index(view)
  local c = cache[view]
  local version = dict:get(c.version_key)
  if version == c.version then return c.by_key end
  c.version = version
  local list = list_of(c, version)
  -- nothing stored (first start) or unreadable: keep what this worker had
  if list == nil then return c.by_key end
  local by_key = {}
  for _, entry in ipairs(list) do
    if c.keys then
      local keys = entry[c.keys]
      if type(keys) == "table" then
        for _, k in ipairs(keys) do by_key[k] = entry end
      end
    elseif entry[c.key] ~= nil then
      by_key[entry[c.key]] = entry
    end
  end
  c.by_key = by_key
  return by_key
end

--- backend is the pushed Backend named `name`, or nil.
function _M.backend(name)
  return index("backends")[name]
end

--- certificate is the pushed ServedCertificate (a Secret's) serving exactly `host` (an Ingress TLS host), or nil.
function _M.certificate(host)
  return index("certificates")[host]
end

--- server_certificate is the pushed ServedCertificate serving the Gateway server keyed `key`, or nil.
function _M.server_certificate(key)
  return index("server_certificates")[key]
end

--- route_server is the pushed RouteServer whose key is `key` (`<port>/<hostname or _>`), or nil.
function _M.route_server(key)
  return index("routes")[key]
end

return _M
