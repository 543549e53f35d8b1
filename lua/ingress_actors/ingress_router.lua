-- The Ingress path router: picks, for a host and the request's normalised URI ($uri), the entry nginx's
-- rendered `location` blocks would pick (src/model/ingress-routes.ts builds a host's entries from
-- toLocations), and route() serves a request from the pushed table (issue 29, "routes are data":
-- control.lua's POST /ingress-routes stores it host by host), jumping to the entry's profile. Tested
-- against nginx's own lookup (test/lua/ingress-router.test.ts, ingress-router-template.test.ts, both
-- through a push and route()) and as served (test/lua/ingress-routes.test.ts).
--
-- nginx's order, kept here: an `exact` entry equal to the URI wins outright; else an entry marked
-- autoRedirect whose path is the URI and a `/` makes nginx answer 301 to that path (proxy_pass's
-- auto_redirect: an Exact `/foo/` redirects `/foo`), unless a prefix equals the URI; else the longest
-- `prefix` is remembered and the regexes (`regex` ~, `iregex` ~*) are tried in the entries' order (the
-- file's), the first that matches anywhere in the URI wins; else the longest prefix; else nothing (nil:
-- the caller answers 404, though every Ingress host has a `/`). An entry marked `internal` (auth-url's
-- subrequest location) is picked like any exact one, and the caller answers 404, as nginx does.
--
-- Cost: prefix comparison is case-sensitive, as nginx's on Linux; prefixes are `/` or end in `/`
-- (toLocations renders Prefix paths element-wise), so the longest one is found by looking up the URI's
-- `/`-ended prefixes, longest first, in a hash: linear in the URI whatever the number of entries, and
-- no string built but those prefixes. Regexes run through ngx.re with "o" (compiled once per worker;
-- lua_regex_cache_max_entries, 1024 by default, bounds that cache, so issue 29 must size it to the
-- regex budget) and "j" (PCRE JIT, as nginx's pcre_jit).
local re_find = ngx.re.find
local byte, sub = string.byte, string.sub

local SLASH = 47 -- "/"

local _M = {}

local OPTIONS = { regex = "jo", iregex = "ijo" }

-- prepare indexes a host's entries once per decoded table (the prepared form hangs on the host's table,
-- so a new pushed version drops it): exact and prefix paths in hashes, regexes in order with their options
local function prepare(h)
  local exact, prefix, regex, redirect = {}, {}, {}, {}
  local longest = 0
  for _, e in ipairs(h.entries) do
    local kind, path = e.kind, e.path
    if type(path) ~= "string" or path == "" then return nil, "an entry without a path" end
    if kind == "exact" then
      if exact[path] == nil then exact[path] = e end
    elseif kind == "prefix" then
      if byte(path, -1) ~= SLASH then return nil, "prefix " .. path .. " does not end in /" end
      if prefix[path] == nil then prefix[path] = e end
      if #path > longest then longest = #path end
    elseif OPTIONS[kind] then
      regex[#regex + 1] = { pattern = path, options = OPTIONS[kind], entry = e }
    else
      return nil, "unknown match kind " .. tostring(kind)
    end
    if e.autoRedirect and (kind == "exact" or kind == "prefix") and #path > 1 and byte(path, -1) == SLASH then
      local from = sub(path, 1, -2)
      if redirect[from] == nil then redirect[from] = e end
    end
  end
  h.prepared = {
    exact = exact, prefix = prefix, longest = longest, regex = regex, nregex = #regex, redirect = redirect,
  }
  return h.prepared
end

--- prepare_host indexes a host's entries now (pick does it on first use); nil and an error for a malformed entry.
function _M.prepare_host(h)
  if h.prepared then return h.prepared end
  return prepare(h)
end

-- longest_prefix is the entry of the longest prefix of `uri` ending in "/", or nil; it looks no further
-- than the host's longest prefix
local function longest_prefix(p, uri)
  local n = #uri
  local i = n < p.longest and n or p.longest
  local prefix = p.prefix
  while i > 0 do
    if byte(uri, i) == SLASH then
      local e = prefix[i == n and uri or sub(uri, 1, i)]
      if e then return e end
    end
    i = i - 1
  end
  return nil
end

--- pick is the entry of host `h` nginx would serve `uri` (the normalised $uri) from, or nil (no entry
--- matches, or an entry of the host is malformed: then nil and the error). A second value true means
--- nginx answers 301 to the entry's path instead (auto_redirect; `?` and the args follow when there are some).
function _M.pick(h, uri)
  local p = h.prepared
  if p == nil then
    local err
    p, err = prepare(h)
    if p == nil then return nil, err end
  end
  local e = p.exact[uri]
  if e then return e end
  e = p.redirect[uri]
  if e and p.prefix[uri] == nil then return e, true end
  -- a host whose only prefix is `/` (most) needs no walk; the walk's loop makes LuaJIT leave route() to the interpreter
  local longest, best = p.longest, nil
  if longest == 1 then
    if byte(uri, 1) == SLASH then best = p.prefix["/"] end
  elseif longest > 1 then
    best = longest_prefix(p, uri)
  end
  local regex = p.regex
  for i = 1, p.nregex do
    local r = regex[i]
    if re_find(uri, r.pattern, r.options) then return r.entry end
  end
  return best
end

--- host is the routes of the request's host (ngx.var.host: lower case, no port, no trailing dot) as nginx
--- picks the server: `get(name)` for the exact name, then for the wildcard of one more label (`*.` and
--- the rest, as server_name `~^[^.]+\.rest$`), then for `_` (the default server); nil when none.
function _M.host(get, name)
  local h = get(name)
  if h then return h end
  local dot = name:find(".", 1, true)
  if dot and dot > 1 and dot < #name then
    h = get("*." .. sub(name, dot + 1))
    if h then return h end
  end
  return get("_")
end

-- Serving: the pushed table (control.lua's POST /ingress-routes stores each host's JSON under "ih:<host>" and the
-- push generation that wrote it under "ihs:<host>": keyed.lua), read per request by route() in the shared server's
-- `location /`.

local keyed = require("ingress_actors.keyed")
local dict = ngx.shared.ia_config
local exec, exit, var = ngx.exec, ngx.exit, ngx.var
-- reads go through accessors.lua (compiled by LuaJIT; resty.core's ngx.var reads are not), writes through ngx.var
local get = require("ingress_actors.accessors").var
local pick = _M.pick
local http_version = ngx.req.http_version
local balancer_rewrite = require("ingress_actors.balancer").rewrite
local tracing_rewrite = require("ingress_actors.tracing").rewrite

-- a host longer than this is in no table (validate.lua's bound): it can only fall to `_`, and is never cached
local MAX_HOST = require("ingress_actors.schema").limits.host
-- request hosts remembered at most (each at most MAX_HOST bytes, so about 2.5 MB a worker): the cache is emptied when
-- it is full, so clients sending made-up Host headers cost a few lookups each, never memory. A field only so the
-- tests can make it small (init_by_lua); nothing else sets it.
_M.max_resolved = 8192

-- a stored host as a worker keeps it: each entry given its exec target, or { err = ... } when it does not prepare
local function prepared(h, key)
  local err
  if type(h) ~= "table" or type(h.entries) ~= "table" then
    err = "does not decode"
  else
    local _
    _, err = prepare(h)
  end
  if err then return { host = key, err = err } end
  for _, e in ipairs(h.entries) do e.target = "@ia_p_" .. e.profile end
  return h
end

-- the stored hosts, read through keyed.lua: a push costs each worker the hosts it changed
local hosts = keyed.reader(dict, "ingress_routes", "ih", prepared)
local record = hosts.entry
-- per worker, for one push generation: each request host seen -> its record, or false
local resolved, nresolved = {}, 0

-- lookup is the record serving request host `name`, or false
local function lookup(name)
  local r = resolved[name]
  if r ~= nil then return r end
  if #name > MAX_HOST then return record("_") or false end
  r = _M.host(record, name) or false
  if nresolved >= _M.max_resolved then resolved, nresolved = {}, 0 end
  resolved[name] = r
  nresolved = nresolved + 1
  return r
end

--- resolved_count is how many request hosts this worker remembers (tests: the cache stays bounded).
function _M.resolved_count()
  return nresolved
end

--- decoded_count is how many stored hosts this worker has decoded (tests: a push costs the hosts it changed).
function _M.decoded_count()
  return hosts.decoded()
end

--- route serves the request from the pushed Ingress route table, in rewrite_by_lua of the shared server's
--- `location /`: it picks the host's entry, sets the variables its profile reads ($proxy_upstream_name, with
--- `metrics` $ia_host and $ia_route, with the entry's info $namespace, $ingress_name, $service_name, $service_port)
--- and jumps to the profile's named location `@ia_p_<profile>`. No host or entry, or an internal one: 404.
--- `inline` names the profile `location /` itself holds (`@ia_p_<profile>`; server.hbs writes it when a profile is
--- only the balanced proxy_pass, or that with a span's mode and proxied headers), or nil: a request of that profile
--- without a body is served there, no jump. `otel` is that profile's span mode ("trust" or "new", as its `set
--- $ia_otel`), or nil: the router sets it and starts the span as the http level's rewrite_by_lua would after a jump.
function _M.route(metrics, inline, otel)
  -- one read of the generation per request; after a push, what this worker decoded is kept only where unchanged
  if hosts.fresh() then resolved, nresolved = {}, 0 end
  local name = get("host")
  local h = lookup(name)
  if not h then return exit(404) end
  if h.err then
    if not h.logged then
      h.logged = true
      ngx.log(ngx.ERR, "ingress-actors: the Ingress routes of ", h.host, " cannot serve: ", h.err)
    end
    return exit(500)
  end
  local e, redirect = pick(h, get("uri"))
  if e == nil or e.internal then return exit(404) end
  if redirect then
    -- absolute, as nginx's auto_redirect makes it (absolute_redirect and port_in_redirect on, server_name_in_redirect
    -- off: the request's host, the local port unless the scheme's default); the Lua module leaves a relative one as is
    local scheme, port, args = get("scheme"), get("server_port"), get("args")
    local authority = port == (scheme == "https" and "443" or "80") and name or (name .. ":" .. port)
    local path = args and args ~= "" and (e.path .. "?" .. args) or e.path
    return ngx.redirect(scheme .. "://" .. authority .. path, 301)
  end
  -- nginx checked Content-Length against the router's location (no limit there): the profile's limit is checked here
  local length = get("http_content_length")
  local max = e.maxBodySize
  if max and length then
    local n = tonumber(length)
    if n and n > max then return exit(413) end
  end
  local upstream = e.upstream or "-"
  var.proxy_upstream_name = upstream
  if metrics then
    var.ia_host = h.host
    var.ia_route = e.route or ""
  end
  local info = e.info
  if info then
    var.namespace = info.namespace
    var.ingress_name = info.ingressName
    var.service_name = info.serviceName
    var.service_port = info.servicePort
  end
  -- the jump costs a second pass through the rewrite phase and a second Lua handler: the profile `location /` holds
  -- is served here, but only without a body, which nginx would read under this location's limit (none), not the
  -- profile's. HTTP/2 is left out: a body there needs no Content-Length nor Transfer-Encoding (and a version the Lua
  -- module does not name, as HTTP/1.2, is nil).
  if e.target == inline and length == nil and get("http_transfer_encoding") == nil and (http_version() or 2) < 2 then
    if otel then
      var.ia_otel = otel
      tracing_rewrite()
    end
    return balancer_rewrite(upstream)
  end
  return exec(e.target)
end

return _M
