-- Consistent hashing: every peer owns ~160 points on a crc32 ring, a key goes to the owner of the
-- first point at or after its hash. A peer's points depend only on its own address and port, so
-- peers coming or going move only the keys of the peers that came or went.
local _M = {}
_M.__index = _M

local POINTS = 160
local crc32 = ngx.crc32_long
local floor = math.floor

--- new builds the ring of `peers` (the backend's endpoints).
function _M.new(peers)
  local points = {}
  for i, p in ipairs(peers) do
    local id = p.address .. "\0" .. p.port .. "\0"
    for j = 1, POINTS do
      points[#points + 1] = { crc32(id .. j), i }
    end
  end
  -- ties broken by peer identity so every worker builds the same ring
  table.sort(points, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    local pa, pb = peers[a[2]], peers[b[2]]
    if pa.address ~= pb.address then return pa.address < pb.address end
    return pa.port < pb.port
  end)
  local hashes, owners = {}, {}
  for k, pt in ipairs(points) do
    hashes[k], owners[k] = pt[1], pt[2]
  end
  return setmetatable({ hashes = hashes, owners = owners, n = #peers }, _M)
end

-- first is the position of the first point >= h (wrapping to 1)
local function first(hashes, h)
  local lo, hi = 1, #hashes
  if h > hashes[hi] then return 1 end
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if hashes[mid] < h then lo = mid + 1 else hi = mid end
  end
  return lo
end

--- pick is the index of the peer owning `key`; on a retry the next owner along the ring not in
--- `tried`; nil when all were tried.
function _M:pick(tried, key)
  local hashes, owners = self.hashes, self.owners
  local total = #hashes
  if total == 0 then return nil end
  local at = first(hashes, crc32(key))
  for _ = 1, total do
    local i = owners[at]
    if not tried[i] then return i end
    at = at % total + 1
  end
  return nil
end

return _M
