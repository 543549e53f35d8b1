-- Round robin over a backend's peers. Each worker starts at a random offset so that N workers
-- do not all send their first request to the same peer.
local _M = {}
_M.__index = _M

--- new makes a round robin over `peers` (the backend's endpoints).
function _M.new(peers)
  return setmetatable({ peers = peers, next = math.random(#peers) }, _M)
end

--- pick is the index of the next peer not in `tried`, or nil when all were tried.
function _M:pick(tried)
  local n = #self.peers
  -- the first try without a loop: a loop makes LuaJIT leave balance() to the interpreter
  local first = self.next
  self.next = first % n + 1
  if not tried[first] then return first end
  for _ = 2, n do
    local i = self.next
    self.next = i % n + 1
    if not tried[i] then return i end
  end
  return nil
end

return _M
