-- The request's side of the balancer: rewrite finds the backend ($proxy_upstream_name, set by
-- nginx.conf, never by the client) and refuses early when it has no peer; balance picks a peer
-- from the pushed table only; log feeds EWMA. The request can choose a backend only among those
-- nginx.conf names for its location, and never a peer address.
local cjson = require("cjson.safe")
local ngx_balancer = require("ngx.balancer")
local tables = require("ingress_actors.tables")
local round_robin = require("ingress_actors.round_robin")
local chash = require("ingress_actors.chash")
local ewma = require("ingress_actors.ewma")
-- variables read through accessors.lua: LuaJIT compiles those reads, not resty.core's ngx.var ones
local get = require("ingress_actors.accessors").var

local _M = {}

local null = cjson.null

-- name -> { endpoints = <table of the version it was built for>, impl = picker, sig = string }
local pickers = {}
-- name -> peer key -> EWMA stats, kept across pushes for peers that stay
local ewma_stats = {}
local seeded = false
-- sticky: backend name and the md5 of a client's affinity key -> "address|port" of the peer it reached, shared by
-- the workers and kept across reloads; the least recently used entries go when it is full
local sticky_peers = ngx.shared.ia_sticky

local function signature(b)
  local parts = { b.balance, tostring(b.hashKey) }
  for _, p in ipairs(b.endpoints) do parts[#parts + 1] = p.address .. "|" .. p.port end
  return table.concat(parts, ",")
end

-- picker is the backend's picker, built again only when its method or peers changed
local function picker(b)
  local cached = pickers[b.name]
  if cached and cached.endpoints == b.endpoints then return cached.impl end
  local sig = signature(b)
  if cached and cached.sig == sig then
    cached.endpoints = b.endpoints
    return cached.impl
  end
  local impl
  if b.balance == "chash" or b.balance == "sticky" then
    impl = chash.new(b.endpoints)
  elseif b.balance == "ewma" then
    -- keep only the stats of peers still there
    local old, stats = ewma_stats[b.name] or {}, {}
    for _, p in ipairs(b.endpoints) do
      local k = p.address .. ":" .. p.port
      stats[k] = old[k]
    end
    ewma_stats[b.name] = stats
    impl = ewma.new(b.endpoints, stats)
  else
    impl = round_robin.new(b.endpoints)
  end
  pickers[b.name] = { endpoints = b.endpoints, impl = impl, sig = sig }
  return impl
end

-- hash_key evaluates a pushed `$var` expression; a variable nginx does not know is ""
local function hash_key(expr)
  return (expr:gsub("%$([%w_]+)", function(var)
    local ok, v = pcall(get, var)
    if not ok or v == nil then return "" end
    return v
  end))
end

local function peer_id(p)
  return p.address .. "|" .. p.port
end

-- remembered is the index of the untried peer `key` reached before, if it is still an endpoint
local function remembered(b, key, tried)
  local id = sticky_peers:get(key)
  if id == nil then return nil end
  for i, p in ipairs(b.endpoints) do
    if not tried[i] and peer_id(p) == id then return i end
  end
  return nil
end

-- sticky_pick is the peer `key` reached before, else the ring's pick, remembered for the key's next requests
local function sticky_pick(b, impl, tried, key)
  -- a template without `lua_shared_dict ia_sticky` still balances: by the ring alone, as rendered mode does
  if sticky_peers == nil then return impl:pick(tried, key) end
  -- the client chooses its cookie: hashed, so every entry is the same small size
  local dict_key = b.name .. "\0" .. ngx.md5(key)
  local i = remembered(b, dict_key, tried)
  if i ~= nil then return i end
  i = impl:pick(tried, key)
  if i ~= nil then
    local ok, err = sticky_peers:set(dict_key, peer_id(b.endpoints[i]))
    if not ok then ngx.log(ngx.WARN, "ingress-actors: could not remember a sticky peer of ", b.name, ": ", err) end
  end
  return i
end

-- what a first try has tried: nothing (pickers only read it)
local NONE_TRIED = setmetatable({}, { __newindex = function() error("NONE_TRIED is read-only") end })

local function usable(name)
  return name ~= nil and name ~= "" and name ~= "-"
end

--- rewrite (rewrite_by_lua) answers 503 for a backend unknown or without endpoints, and keeps the
--- backend in ngx.ctx so balance and log use the table this request started with. `name` is
--- $proxy_upstream_name when the caller has it already (the Ingress router, which sets it).
function _M.rewrite(name)
  if ngx.is_subrequest then return end
  if name == nil then name = get("proxy_upstream_name") end
  if not usable(name) then return end
  local b = tables.backend(name)
  if b == nil or #b.endpoints == 0 then
    return ngx.exit(ngx.HTTP_SERVICE_UNAVAILABLE)
  end
  ngx.ctx.ia_backend = b
end

--- balance (balancer_by_lua) sets the peer: the method's pick, and on a retry a peer this request
--- has not tried; it grants one more try only while an untried peer remains.
function _M.balance()
  if not seeded then
    -- workers are forked with the master's random state: give each its own
    math.randomseed(ngx.now() * 1000 + ngx.worker.pid())
    seeded = true
  end
  local ctx = ngx.ctx
  local b = ctx.ia_backend
  if b == nil then
    local name = get("proxy_upstream_name")
    b = usable(name) and tables.backend(name) or nil
    if b == nil or #b.endpoints == 0 then
      -- only rewrite() can answer 503: an error in the balancer phase is a 500 (lua-nginx-module 0.10.23)
      ngx.log(ngx.ERR, "ingress-actors: no peer for backend ", tostring(name),
        " (a location with its own rewrite_by_lua must call balancer.rewrite())")
      return ngx.exit(ngx.ERROR)
    end
    ctx.ia_backend = b
  end
  local impl = picker(b)
  -- the peers tried so far: none on the first try (no table made, and ngx.ctx keeps to the four fields it is made
  -- with), a table from the first retry on
  local tries = ctx.ia_tries or 0
  local tried = ctx.ia_tried
  if tried == nil then
    tried = NONE_TRIED
    if tries > 0 then
      tried = { [ctx.ia_peer] = true }
      ctx.ia_tried = tried
    end
  end
  local key = nil
  if b.balance == "chash" or b.balance == "sticky" then
    key = ctx.ia_key
    if key == nil then
      key = (b.hashKey ~= nil and b.hashKey ~= null) and hash_key(b.hashKey) or ""
      ctx.ia_key = key
    end
  end
  local i
  if b.balance == "sticky" then
    i = sticky_pick(b, impl, tried, key)
  else
    i = impl:pick(tried, key)
  end
  if i == nil then
    ngx.log(ngx.ERR, "ingress-actors: every peer of ", b.name, " was tried")
    return ngx.exit(ngx.ERROR)
  end
  if tried ~= NONE_TRIED then tried[i] = true end
  tries = tries + 1
  ctx.ia_tries, ctx.ia_peer, ctx.ia_impl = tries, i, impl
  -- a Gateway route's timeouts (router.lua), in seconds for connect, send and read
  local timeout = ctx.ia_timeout
  if timeout ~= nil then
    local ok, err = ngx_balancer.set_timeouts(timeout, timeout, timeout)
    if not ok then ngx.log(ngx.WARN, "ingress-actors: could not set the timeouts of ", b.name, ": ", err) end
  end
  local p = b.endpoints[i]
  local address = p.address
  if address:find(":", 1, true) then address = "[" .. address .. "]" end
  local ok, err = ngx_balancer.set_current_peer(address, p.port)
  if not ok then
    ngx.log(ngx.ERR, "ingress-actors: could not set peer ", address, ":", p.port, " of ", b.name, ": ", err)
    return ngx.exit(ngx.ERROR)
  end
  if tries < #b.endpoints and not ctx.ia_no_retry then
    ngx_balancer.set_more_tries(1)
  end
end

-- last is the last number of an nginx list like "0.001, 0.002 : 0.003" ("-" when none)
local function last(v)
  if v == nil then return nil end
  return tonumber(v:match("([^,:%s]+)%s*$"))
end

--- log (log_by_lua) feeds an EWMA backend with the response time of the peer that answered.
function _M.log()
  local ctx = ngx.ctx
  local b, impl = ctx.ia_backend, ctx.ia_impl
  if b == nil or impl == nil or b.balance ~= "ewma" then return end
  local connect, header = last(get("upstream_connect_time")), last(get("upstream_header_time"))
  if connect == nil or header == nil then return end
  impl:observe(ctx.ia_peer, connect + header)
end

return _M
