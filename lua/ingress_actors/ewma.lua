-- Peak-EWMA as in ingress-nginx: each peer's latency is an exponentially weighted moving average
-- that decays towards 0 with time (so a peer once slow is tried again); a pick compares two random
-- peers and takes the lower. A peer with no measurement scores 0, so new peers get tried.
local _M = {}
_M.__index = _M

local DECAY_TIME = 10 -- seconds
local exp, random = math.exp, math.random
local now = require("ingress_actors.accessors").now

-- decayed is the score of `s` at time `t` moved towards `rtt` by the time since its last touch
local function decayed(s, rtt, t)
  local td = t - s.at
  if td < 0 then td = 0 end
  local w = exp(-td / DECAY_TIME)
  return s.ewma * w + rtt * (1 - w)
end

--- new makes a picker over `peers`; `stats` (peer key -> {ewma, at}) outlives table versions so
--- a push that keeps a peer keeps its history.
function _M.new(peers, stats)
  local keys = {}
  for i, p in ipairs(peers) do keys[i] = p.address .. ":" .. p.port end
  return setmetatable({ peers = peers, keys = keys, stats = stats }, _M)
end

function _M:score(i)
  local s = self.stats[self.keys[i]]
  if s == nil then return 0 end
  return decayed(s, 0, now())
end

--- pick is the better of two random peers not in `tried`, or nil when all were tried.
function _M:pick(tried)
  local open = {}
  for i = 1, #self.peers do
    if not tried[i] then open[#open + 1] = i end
  end
  local n = #open
  if n == 0 then return nil end
  if n == 1 then return open[1] end
  local a = random(n)
  local b = random(n - 1)
  if b >= a then b = b + 1 end
  a, b = open[a], open[b]
  if self:score(b) < self:score(a) then return b end
  return a
end

--- observe feeds peer `i`'s latest response time (seconds) into its average.
function _M:observe(i, rtt)
  local key = self.keys[i]
  local s = self.stats[key]
  local t = now()
  if s == nil then
    self.stats[key] = { ewma = rtt, at = t }
  else
    s.ewma, s.at = decayed(s, rtt, t), t
  end
end

return _M
