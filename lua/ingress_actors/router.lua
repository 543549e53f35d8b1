-- The Gateway API router (rewrite_by_lua of a Gateway server's `location /`): the server's routes
-- come from the pushed `routes` table (validate.routes checked their shape) under the key nginx.conf
-- sets in $ia_gateway; the first whose match fits the request wins, in the table's order (the
-- controller ordered them by the spec's precedence). Its filters are applied here, a backend is
-- drawn by weight into $proxy_upstream_name, and balancer.rewrite/balance do the rest. No route:
-- 404; an unresolved backend's share, or no weight at all: 500.
local tables = require("ingress_actors.tables")
-- variables read through accessors.lua (LuaJIT compiles those reads, not resty.core's); written through ngx.var
local get = require("ingress_actors.accessors").var

local _M = {}

local re_find = ngx.re.find

-- regex is true when `value` matches all of the anchored pattern (prepare spelled it from the
-- controller's safe subset); "o" keeps the compiled regex in the worker's cache
local function regex(value, anchored)
  local from = re_find(value, anchored, "jo")
  return from ~= nil
end

-- prefix_of is a PathPrefix value without its trailing slash ("/" becomes "": every path starts with it, and
-- the character after it is always "/")
local function prefix_of(p)
  if p:sub(-1) == "/" then return p:sub(1, -2) end
  return p
end

-- path_matches: Exact, PathPrefix on segment boundaries (/foo: /foo, /foo/, /foo/bar; not /foobar), regex
local function path_matches(m, uri)
  if m.type == "Exact" then return uri == m.value end
  if m.type == "PathPrefix" then
    local p = m.prefix
    if uri:sub(1, #p) ~= p then return false end
    local next_char = uri:sub(#p + 1, #p + 1)
    return next_char == "" or next_char == "/"
  end
  return regex(uri, m.anchored)
end

local function value_matches(m, v)
  if v == nil then return false end
  if m.type == "Exact" then return v == m.value end
  return regex(v, m.anchored)
end

-- header_value joins repeated headers with "," as one value
local function header_value(headers, name)
  local v = headers[name]
  if type(v) == "table" then return table.concat(v, ",") end
  return v
end

-- first_arg is a query parameter's first value ("" for a bare `?name`)
local function first_arg(args, name)
  local v = args[name]
  if type(v) == "table" then v = v[1] end
  if v == true then return "" end
  return v
end

-- is_grpc: a gRPC call has content-type application/grpc (or application/grpc+proto, …)
local function is_grpc()
  local ct = get("http_content_type")
  if ct == nil then return false end
  local base = ct:sub(1, 16):lower()
  if base ~= "application/grpc" then return false end
  local next_char = ct:sub(17, 17)
  return next_char == "" or next_char == "+" or next_char == ";"
end

local function anchored(pattern)
  return "^(?:" .. pattern .. ")$"
end

-- the port an origin without one has
local ORIGIN_PORT = { http = 80, https = 443 }

-- cors_prepare spells a CORS filter's origins once: any (a "*" entry), else each one's scheme, port and host,
-- exact, a suffix ("*.bar.com": ".bar.com", after any number of labels) or any ("*")
local function cors_prepare(f)
  local origins = {}
  for _, o in ipairs(f.allowOrigins) do
    if o == "*" then
      f.any_origin = true
    else
      local scheme, host, port = o:match("^(https?)://([^:]+):?(%d*)$")
      local e = { scheme = scheme, port = tonumber(port) or ORIGIN_PORT[scheme] }
      if host == "*" then
        e.any_host = true
      elseif host:sub(1, 2) == "*." then
        e.suffix = host:sub(2)
      else
        e.host = host
      end
      origins[#origins + 1] = e
    end
  end
  f.origins = origins
  f.wild_methods = f.allowMethods[1] == "*"
  f.wild_headers = f.allowHeaders[1] == "*"
  f.methods_value = table.concat(f.allowMethods, ", ")
  f.headers_value = table.concat(f.allowHeaders, ", ")
  f.expose_value = #f.exposeHeaders > 0 and table.concat(f.exposeHeaders, ", ") or nil
end

-- cors_allowed is the Access-Control-Allow-Origin a request's Origin gets, or nil: "*" for any origin without
-- credentials, else the Origin itself when it is scheme://host[:port] of DNS characters (so it is safe to send
-- back) and one of the filter's. Bounded: one pass over a short string per configured origin.
local function cors_allowed(f, origin)
  if f.any_origin and not f.allowCredentials then return "*" end
  if #origin > 300 then return nil end
  local scheme, host, port = origin:match("^(%a[%w+.%-]*)://([%w.%-]+):?(%d*)$")
  if scheme == nil then return nil end
  if f.any_origin then return origin end
  scheme, host = scheme:lower(), host:lower()
  port = tonumber(port) or ORIGIN_PORT[scheme]
  for _, e in ipairs(f.origins) do
    if e.scheme == scheme and e.port == port then
      if e.any_host or e.host == host then return origin end
      local suffix = e.suffix
      if suffix ~= nil and #host > #suffix and host:sub(-#suffix) == suffix then return origin end
    end
  end
  return nil
end

-- a method or a list of header names the client asked for, as a preflight may send them back
local function token(v)
  return #v <= 32 and v:find("^[%w!#$%%&'*+.^_`|~%-]+$") ~= nil
end
local function token_list(v)
  return #v <= 4096 and v:find("^[%w!#$%%&'*+.^_`|~%-, ]*$") ~= nil
end

-- cors_headers are the headers every answer to a request with Origin gets (header_filter's for an actual request):
-- the CORS ones for an allowed origin (`allowed`), and Vary unless every origin gets the same "*"
local function cors_headers(f, allowed)
  if allowed ~= nil then
    ngx.header["Access-Control-Allow-Origin"] = allowed
    if f.allowCredentials then ngx.header["Access-Control-Allow-Credentials"] = "true" end
    if f.expose_value then ngx.header["Access-Control-Expose-Headers"] = f.expose_value end
  end
  if allowed ~= "*" then
    -- the answer depends on Origin: caches must keep one per origin
    local vary = ngx.header["Vary"]
    if type(vary) == "table" then vary = table.concat(vary, ", ") end
    ngx.header["Vary"] = vary and (vary .. ", Origin") or "Origin"
  end
end

-- cors answers a preflight (OPTIONS with Origin and Access-Control-Request-Method) itself: 200, with the CORS
-- headers when its origin is allowed, none otherwise; it returns true then. An actual request from an allowed
-- origin goes on, its answer gets the headers in header_filter.
local function cors(f, method, origin)
  local allowed = cors_allowed(f, origin)
  local asked_method = get("http_access_control_request_method")
  if method ~= "OPTIONS" or asked_method == nil then
    ngx.ctx.ia_cors = { f = f, allowed = allowed }
    return false
  end
  ngx.status = ngx.HTTP_OK
  cors_headers(f, allowed)
  if allowed then
    -- a "*" list answers what was asked: with credentials the spec forbids "*" there
    if f.wild_methods then
      if token(asked_method) then ngx.header["Access-Control-Allow-Methods"] = asked_method end
    elseif f.methods_value ~= "" then
      ngx.header["Access-Control-Allow-Methods"] = f.methods_value
    end
    local asked_headers = get("http_access_control_request_headers")
    if asked_headers ~= nil then
      if f.wild_headers then
        if token_list(asked_headers) then ngx.header["Access-Control-Allow-Headers"] = asked_headers end
      elseif f.headers_value ~= "" then
        ngx.header["Access-Control-Allow-Headers"] = f.headers_value
      end
    end
    ngx.header["Access-Control-Max-Age"] = f.maxAge
  end
  ngx.header["Content-Length"] = 0
  ngx.send_headers()
  return true
end

-- prepare spells, once per decoded table (a worker decodes each pushed version once), what the
-- matching would otherwise build again on every request: anchored regexes, PathPrefix values
-- without their trailing slash, header names in lower case (as ngx.req.get_headers gives them)
local function prepare(server)
  for _, r in ipairs(server.routes) do
    local p = r.path
    if p.type == "PathPrefix" then
      p.prefix = prefix_of(p.value)
    elseif p.type == "RegularExpression" then
      p.anchored = anchored(p.value)
    end
    for _, m in ipairs(r.headers) do
      m.lname = m.name:lower()
      if m.type == "RegularExpression" then m.anchored = anchored(m.value) end
    end
    for _, m in ipairs(r.queryParams) do
      if m.type == "RegularExpression" then m.anchored = anchored(m.value) end
    end
    for _, f in ipairs(r.filters) do
      if f.type == "RequestHeaderModifier" then
        for _, h in ipairs(f.add) do h.lname = h.name:lower() end
      elseif f.type == "CORS" then
        cors_prepare(f)
        r.cors = f
      end
    end
    -- the ResponseHeaderModifier filters header_filter applies, or nil: those before a RequestRedirect
    -- only, as the redirect answers at once (rewrite never gets to the filters after it)
    local response = nil
    for _, f in ipairs(r.filters) do
      if f.type == "RequestRedirect" then break end
      if f.type == "ResponseHeaderModifier" then
        response = response or {}
        response[#response + 1] = f
      end
    end
    r.response = response
    -- the balancer's timeout in seconds (the smaller of request and backendRequest), or nil; a request
    -- timeout bounds the whole answer: no retry on another peer after a timed-out try
    local t = r.timeouts
    local ms = t.backendRequest
    local request = t.request ~= nil and t.request > 0
    if request and (ms == nil or ms == 0 or ms > t.request) then ms = t.request end
    r.timeout_s = (ms ~= nil and ms > 0) and ms / 1000 or nil
    r.no_retry = request or nil
    local total = 0
    for _, b in ipairs(r.backends) do
      total = total + b.weight
      for _, f in ipairs(b.filters or {}) do
        for _, h in ipairs(f.add) do h.lname = h.name:lower() end
      end
    end
    r.total_weight = total
  end
  server.prepared = true
end

local function matches(r, req)
  -- a GRPCRoute's entry takes gRPC calls only: the rest of the host stays its HTTPRoutes'
  if r.grpc then
    if req.grpc == nil then req.grpc = is_grpc() end
    if not req.grpc then return false end
  end
  if not path_matches(r.path, req.uri) then return false end
  if r.method ~= nil and r.method ~= req.method then return false end
  if #r.headers > 0 then
    req.headers = req.headers or ngx.req.get_headers(100)
    for _, m in ipairs(r.headers) do
      if not value_matches(m, header_value(req.headers, m.lname)) then return false end
    end
  end
  if #r.queryParams > 0 then
    req.args = req.args or ngx.req.get_uri_args(100)
    for _, m in ipairs(r.queryParams) do
      if not value_matches(m, first_arg(req.args, m.name)) then return false end
    end
  end
  return true
end

-- replaced is the path after a ReplaceFullPath or ReplacePrefixMatch of the matched prefix
local function replaced(mod, r, uri)
  if mod.type == "ReplaceFullPath" then return mod.value end
  -- prepare spelled the prefix (ReplacePrefixMatch comes with a PathPrefix match only)
  local rest = uri:sub(#r.path.prefix + 1)
  local with = mod.value
  if with:sub(-1) == "/" and rest:sub(1, 1) == "/" then with = with:sub(1, -2) end
  local out = with .. rest
  if out == "" then return "/" end
  return out
end

local function modify_request_headers(f)
  for _, h in ipairs(f.set) do ngx.req.set_header(h.name, h.value) end
  if #f.add > 0 then
    -- read once, after the sets; each add writes its result back, so a later add of the same name extends it
    local headers = ngx.req.get_headers(100)
    for _, h in ipairs(f.add) do
      local old = header_value(headers, h.lname)
      local value = old and (old .. "," .. h.value) or h.value
      ngx.req.set_header(h.name, value)
      headers[h.lname] = value
    end
  end
  for _, n in ipairs(f.remove) do ngx.req.clear_header(n) end
end

local DEFAULT_PORT = { http = 80, https = 443 }

-- escape_path spells a decoded path for a Location header: what is not a path character becomes %XX
local function escape_path(path)
  return (path:gsub("[^%w%-._~/!$&'()*+,;=:@]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- a name as a Location host, or nil: DNS letters, digits, dots and dashes only (a TLS server name is the client's)
local function plain_name(name)
  if name == nil or name == "" or #name > 253 or not name:find("^[%w][%w.-]*$") then return nil end
  return name:lower()
end

-- redirect_host is the host a Location names when the filter names none: the one the client asked for (the
-- request line's or Host), else its TLS server name, else the listener's exact hostname (the server's key ends
-- with it), else the address the client connected to, as nginx's own redirects do. nil: none (a unix socket
-- without PROXY protocol). $host alone would be the server_name: "" for a catch-all, `*.…` for a wildcard.
local function redirect_host(key)
  local given = get("http_host")
  if (given ~= nil and given ~= "") or (get("request") or ""):find("^%S+%s+%a[%w+.-]*://") then
    return get("host")
  end
  local name = plain_name(get("ssl_server_name")) or plain_name(key:match("/([^/]+)$"))
  if name ~= nil then return name end
  local addr = get("proxy_protocol_server_addr")
  if addr == nil or addr == "" then addr = get("server_addr") end
  if addr == nil or addr == "" or addr:find("^unix:") then return nil end
  return addr:find(":", 1, true) and ("[" .. addr .. "]") or addr
end

local function redirect(f, r, server, uri)
  local scheme = f.scheme or get("scheme")
  local host = f.hostname or redirect_host(get("ia_gateway"))
  -- no host to name (HTTP/1.0 without Host on a socket without an address): refused, as nginx refuses HTTP/1.1
  if host == nil then return ngx.exit(ngx.HTTP_BAD_REQUEST) end
  local port = f.port
  if port == nil then
    -- the spec: the scheme's well-known port when the redirect names a scheme, else the listener's
    port = f.scheme and DEFAULT_PORT[f.scheme] or server.port
  end
  local path = f.path and replaced(f.path, r, uri) or uri
  local location = scheme .. "://" .. host
  if port ~= DEFAULT_PORT[scheme] then location = location .. ":" .. port end
  -- the path is data from the table or nginx's decoded $uri: escape it back for the header
  location = location .. escape_path(path)
  local args = get("args")
  if args ~= nil and args ~= "" then location = location .. "?" .. args end
  return ngx.redirect(location, f.statusCode)
end

-- pick draws a route's backend entry by weight: nil for an unresolved share or no weight at all
local function pick(r)
  local backends = r.backends
  if #backends == 1 then
    local b = backends[1]
    return (b.weight > 0 and b.backend) and b or nil
  end
  local total = r.total_weight
  if total == 0 then return nil end
  local n = math.random() * total
  for _, b in ipairs(backends) do
    if b.weight > 0 then
      if n < b.weight then return b.backend and b or nil end
      n = n - b.weight
    end
  end
  return nil
end

-- sni_listener is the hostname of the most specific listener ('' for one without) that the TLS server name `sni`
-- picks among a socket's HTTPS listeners, or nil: an exact name, else the longest wildcard suffix, else ''
local function sni_listener(listeners, sni)
  local best, best_len = nil, -1
  for _, h in ipairs(listeners) do
    if h == sni then return h end
    if h == "" then
      if best_len < 0 then best, best_len = h, 0 end
    elseif h:sub(1, 1) == "*" then
      local suffix = h:sub(2)
      if #suffix > best_len and #sni > #suffix and sni:sub(-#suffix) == suffix then best, best_len = h, #suffix end
    end
  end
  return best
end

-- misdirected: the TLS server name picked another listener than the one whose server the Host header reached
-- (HTTP/2 connection reuse, or a client that sends one name in SNI and another in Host): 421, as the spec asks
local function misdirected(tls)
  local sni = get("ssl_server_name")
  if sni == nil or sni == "" or #sni > 253 then return false end
  return sni_listener(tls.listeners, sni:lower()) ~= tls.listener
end

local seeded = false

--- rewrite picks the route and applies its filters; it answers 404, 500 or a redirect itself.
--- `slots` is how many mirror slots nginx.conf gave the location (none while no route of the server
--- mirrors; a route's first mirror reloads nginx, and until then its copies are not sent).
function _M.rewrite(slots)
  if ngx.is_subrequest then return end
  if not seeded then
    math.randomseed(ngx.now() * 1000 + ngx.worker.pid())
    seeded = true
  end
  local server = tables.route_server(get("ia_gateway"))
  if server == nil then return ngx.exit(ngx.HTTP_NOT_FOUND) end
  if not server.prepared then prepare(server) end
  if server.tls ~= nil and misdirected(server.tls) then return ngx.exit(421) end
  local req = { uri = get("uri"), method = ngx.req.get_method() }
  local found, index = nil, nil
  for i, r in ipairs(server.routes) do
    if matches(r, req) then
      found, index = r, i
      break
    end
  end
  if found == nil then return ngx.exit(ngx.HTTP_NOT_FOUND) end
  local ctx = ngx.ctx
  -- header_filter reads it only: the route's own list serves every request
  ctx.ia_response = found.response
  if found.cors ~= nil then
    local origin = get("http_origin")
    if origin ~= nil and cors(found.cors, req.method, origin) then return ngx.exit(ngx.HTTP_OK) end
  end
  local mirrors = nil
  for _, f in ipairs(found.filters) do
    if f.type == "RequestRedirect" then
      return redirect(f, found, server, req.uri)
    elseif f.type == "RequestHeaderModifier" then
      modify_request_headers(f)
    elseif f.type == "URLRewrite" then
      if f.hostname then ngx.var.ia_gw_host = f.hostname end
      if f.path then ngx.req.set_uri(replaced(f.path, found, req.uri), false) end
    elseif f.type == "RequestMirror" and slots ~= nil and slots > 0 then
      -- slot n of nginx.conf's mirrors takes the n-th filter; "-" leaves a slot idle
      mirrors = mirrors or {}
      local on = f.backend ~= nil and (f.percent >= 100 or math.random() * 100 < f.percent)
      mirrors[#mirrors + 1] = on and f.backend or "-"
    end
  end
  if mirrors then
    ngx.var.ia_mirror = table.concat(mirrors, " ")
    ngx.var.ia_mirror_uri = get("request_uri")
  end
  ctx.ia_timeout, ctx.ia_no_retry = found.timeout_s, found.no_retry
  local picked = pick(found)
  if picked == nil then
    return ngx.exit(ngx.HTTP_INTERNAL_SERVER_ERROR)
  end
  -- the picked backendRef's own filters, after the rule's
  if picked.filters ~= nil then
    for _, f in ipairs(picked.filters) do modify_request_headers(f) end
  end
  ngx.var.proxy_upstream_name = picked.backend
  if picked.tls then
    -- BackendTLSPolicy: the server's profile location holds the CA (nginx.conf); the name to send and verify is
    -- a variable. A profile nginx.conf lacks yet (before its reload) is nginx's 500, never plaintext.
    if found.grpc then return ngx.exit(ngx.HTTP_INTERNAL_SERVER_ERROR) end
    ngx.var.ia_gw_pick = index
    ngx.var.ia_btls_name = picked.sni
    return ngx.exec("@ia_btls_" .. picked.tls)
  end
  if found.grpc then
    -- grpc_pass lives in the server's named location; ngx.ctx does not survive the jump, the route's index does
    ngx.var.ia_gw_pick = index
    return ngx.exec("@ia_grpc")
  end
end

--- grpc (rewrite_by_lua of the named location @ia_grpc) takes back what the jump dropped: the picked
--- route's ResponseHeaderModifier filters (its request headers and upstream name are already set).
function _M.grpc()
  local server = tables.route_server(get("ia_gateway"))
  local r = server and server.routes[tonumber(get("ia_gw_pick"))]
  -- a push between the two phases may have changed the table: then no response filters, as the new table says
  if r == nil or not r.grpc then return end
  -- a table pushed between the two phases may not be prepared yet
  if not server.prepared then prepare(server) end
  ngx.ctx.ia_response = r.response
end

--- resume (rewrite_by_lua of a BackendTLSPolicy profile location @ia_btls_<key>) takes back what the jump
--- dropped from ngx.ctx: the picked route's response filters, CORS headers and timeouts.
function _M.resume()
  local server = tables.route_server(get("ia_gateway"))
  local r = server and server.routes[tonumber(get("ia_gw_pick"))]
  if r == nil then return end
  if not server.prepared then prepare(server) end
  local ctx = ngx.ctx
  ctx.ia_response = r.response
  ctx.ia_timeout, ctx.ia_no_retry = r.timeout_s, r.no_retry
  local origin = get("http_origin")
  if r.cors ~= nil and origin ~= nil then ctx.ia_cors = { f = r.cors, allowed = cors_allowed(r.cors, origin) } end
end

--- header_filter applies the route's CORS headers and ResponseHeaderModifier filters to the backend's answer.
function _M.header_filter()
  local ctx = ngx.ctx
  local c = ctx.ia_cors
  if c ~= nil then cors_headers(c.f, c.allowed) end
  local mods = ctx.ia_response
  if mods == nil then return end
  for _, f in ipairs(mods) do
    for _, h in ipairs(f.set) do ngx.header[h.name] = h.value end
    for _, h in ipairs(f.add) do
      local old = header_value(ngx.header, h.name)
      ngx.header[h.name] = old and (old .. "," .. h.value) or h.value
    end
    for _, n in ipairs(f.remove) do ngx.header[n] = nil end
  end
end

--- mirror (rewrite_by_lua of the internal mirror location of slot `slot`) sends the copy to that
--- mirror's backend, or ends the subrequest at once when the route mirrors nothing there; nginx
--- drops its answer.
function _M.mirror(slot)
  local list = get("ia_mirror")
  if list == nil or list == "" then return ngx.exit(ngx.HTTP_NO_CONTENT) end
  local name = nil
  local i = 0
  for entry in list:gmatch("%S+") do
    i = i + 1
    if i == slot then name = entry end
  end
  if name == nil or name == "-" then return ngx.exit(ngx.HTTP_NO_CONTENT) end
  local b = tables.backend(name)
  if b == nil or #b.endpoints == 0 then return ngx.exit(ngx.HTTP_NO_CONTENT) end
  ngx.ctx.ia_backend = b
end

return _M
