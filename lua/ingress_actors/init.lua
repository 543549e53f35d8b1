-- init_by_lua (the master, before fork): the token and every module are loaded here, so workers
-- inherit them and never need to read a file or the environment (nginx clears it for workers).
local _M = {}

local MIN_TOKEN = 32
local token = nil

--- master reads the control token and loads the other modules.
function _M.master()
  local t = os.getenv("INGRESS_ACTORS_CONTROL_TOKEN")
  if t ~= nil and #t >= MIN_TOKEN then
    token = t
  else
    token = nil
    ngx.log(ngx.WARN, "ingress-actors: no control token of at least ", MIN_TOKEN,
      " characters in INGRESS_ACTORS_CONTROL_TOKEN: every push will be refused")
  end
  require("cjson.safe")
  require("ngx.ssl")
  require("ngx.balancer")
  require("ingress_actors.validate")
  require("ingress_actors.tables")
  require("ingress_actors.round_robin")
  require("ingress_actors.chash")
  require("ingress_actors.ewma")
  require("ingress_actors.balancer")
  require("ingress_actors.certificate")
  require("ingress_actors.control")
  require("ingress_actors.router")
  require("ingress_actors.tracing")
  -- request metrics' buckets (--time-buckets, --length-buckets, --size-buckets), laid out once for every worker
  require("ingress_actors.monitor").configure(os.getenv("INGRESS_ACTORS_METRIC_BUCKETS"))
end

--- token is the control token, or nil when none fit: then no push is accepted.
function _M.token()
  return token
end

return _M
