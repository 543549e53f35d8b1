-- ssl_certificate_by_lua: the certificate of the SNI host from the pushed table, exact host first,
-- then the wildcard for one more label (Ingress TLS hosts); or, in a Gateway HTTPS server, that
-- server's own entry by its key, nothing else (nginx picked the server by SNI on its address and
-- port). Else the server's certificate in nginx.conf stays. Parsed PEM is cached per worker on the
-- table entry (a Secret's, whatever number of hosts share it), so a new table version drops it with the entry.
local ssl = require("ngx.ssl")
local tables = require("ingress_actors.tables")

local _M = {}

local function lookup(name)
  local c = tables.certificate(name)
  if c then return c end
  local rest = name:match("^[^.]+%.(.+)$")
  if rest then return tables.certificate("*." .. rest) end
  return nil
end

local function parsed(c)
  if c.parsed_cert == nil then
    local cert, err = ssl.parse_pem_cert(c.cert)
    if not cert then return nil, nil, "cert: " .. tostring(err) end
    local key, err2 = ssl.parse_pem_priv_key(c.key)
    if not key then return nil, nil, "key: " .. tostring(err2) end
    c.parsed_cert, c.parsed_key = cert, key
  end
  return c.parsed_cert, c.parsed_key
end

--- serve sets the certificate for the handshake: a Gateway server's own (`server`, its key), or the
--- SNI host's when no server key is given; when the table has none, nginx.conf's stays.
function _M.serve(server)
  local c
  if server then
    c = tables.server_certificate(server)
  else
    local name = ssl.server_name()
    if name == nil or name == "" then return end
    c = lookup(name:lower())
  end
  if c == nil then return end
  local cert, key, err = parsed(c)
  if not cert then
    -- err comes from OpenSSL's parser: it names no key material
    ngx.log(ngx.ERR, "ingress-actors: certificate for ", c.secret, " unusable: ", err)
    return
  end
  local ok
  ok, err = ssl.clear_certs()
  if ok then ok, err = ssl.set_cert(cert) end
  if ok then ok, err = ssl.set_priv_key(key) end
  if not ok then
    ngx.log(ngx.ERR, "ingress-actors: could not set the certificate for ", c.secret, ": ", err)
    return ngx.exit(ngx.ERROR)
  end
end

return _M
