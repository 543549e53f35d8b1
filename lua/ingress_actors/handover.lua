--- handover: what the workers hand the controller through a shared dict's list (request metrics, spans), taken off by
--- the control channel's GET.
local _M = {}

-- one answer's text at most (the controller asks again while entries are left): below LuaJIT's allocator's trim
-- threshold (2 MB), so the memory of an answer's strings is used again by the next instead of given back and faulted in
local DRAIN_BYTES = 1024 * 1024

--- drain takes up to `max` entries of `dict`'s list `list` (and about DRAIN_BYTES): them (a table, answered one by one:
--- no string of them all, which would be fresh memory each time), how many, how many are left, and the count under
--- `dropped` (what the workers dropped since the last drain), taken back.
function _M.drain(dict, list, dropped, max)
  if dict == nil then return {}, 0, 0, 0 end
  local parts, n, size = {}, 0, 0
  while n < max and size < DRAIN_BYTES do
    local v = dict:lpop(list)
    if v == nil then break end
    n = n + 1
    parts[n] = v
    size = size + #v
  end
  local lost = dict:get(dropped) or 0
  if lost > 0 then dict:incr(dropped, -lost) end
  return parts, n, dict:llen(list) or 0, lost
end

--- dropper is a worker's `drop(dict, count, why)` for `what` (the things handed over): it adds `count` to the dict's
--- `dropped` count (the next drain reports it) and warns once per worker, saying why.
function _M.dropper(dropped, what)
  local warned = false
  return function(dict, count, why)
    if count == 0 then return end
    dict:incr(dropped, count, 0)
    if not warned then
      warned = true
      ngx.log(ngx.WARN, "ingress-actors: ", what, " dropped (", why, "); said once per worker")
    end
  end
end

return _M
