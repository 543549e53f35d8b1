-- Request metrics, as ingress-nginx's socket collector counts them (src/http/request-metrics.ts turns them into
-- Prometheus series). The log phase adds each request to a plain table of this worker, keyed by its label set: no
-- shared-memory lock and no allocation per request but the key. A timer hands the deltas over each second (and when
-- the worker exits) as one entry of a list in lua_shared_dict ia_metrics; the controller drains that list through
-- the control channel and keeps the running totals, so a reload's old workers lose nothing and an nginx restart
-- loses at most the last second.
--
-- Label values are never the client's: the host is the server's Ingress host ($ia_host, set per server), the
-- route ($ia_route) a hash of namespace, Ingress, Service and Ingress path set per location, the method one of the
-- standard ones or OTHER, the status nginx's own when it is a registered HTTP status code (or one of nginx's own),
-- else its class (a backend's 299 or 999 becomes 2xx or 9xx): a backend cannot add label values at will.
local tonumber, pairs, concat, floor = tonumber, pairs, table.concat, math.floor
local get_method = ngx.req.get_method
local accessors = require("ingress_actors.accessors")
local var, start_time, now = accessors.var, accessors.start_time, accessors.now

local handover = require("ingress_actors.handover")

local _M = {}

local LIST = "deltas"
local DROPPED = "dropped"
-- list entries waiting for the controller (one per worker per second with traffic): past this, deltas are dropped
local MAX_ENTRIES = 20000
-- label sets one worker holds between two flushes; the label values are bounded by the config, so this is a guard
local MAX_SETS = 10000
local INTERVAL = 1

local METHODS = {
  GET = true, HEAD = true, POST = true, PUT = true, DELETE = true,
  CONNECT = true, OPTIONS = true, TRACE = true, PATCH = true,
}

-- STATUSES: the IANA-registered status codes, 418, and nginx's own (444, 494-497, 499); src/http/request-labels.ts
-- keeps the same list (test/unit/request-metric-bounds.test.ts compares them)
local STATUSES = {}
for code in ([[
  100 101 102 103
  200 201 202 203 204 205 206 207 208 226
  300 301 302 303 304 305 307 308
  400 401 402 403 404 405 406 407 408 409 410 411 412 413 414 415 416 417 418 421 422 423 424 425 426 428 429 431 451
  444 494 495 496 497 499
  500 501 502 503 504 505 506 507 508 510 511
]]):gmatch("%d+") do STATUSES[tonumber(code)] = code end
-- any other code counts as its class; what is not a three-digit code from 100 up (nginx's "000") as "other"
local CLASSES = { "1xx", "2xx", "3xx", "4xx", "5xx", "6xx", "7xx", "8xx", "9xx" }

-- status_label is the label of `status`, the number ngx.status reads (what $status prints, as "%03d")
local function status_label(status)
  local known = STATUSES[status]
  if known then return known end
  if status == nil or status < 100 or status > 999 then return "other" end
  return CLASSES[floor(status / 100)]
end

-- ingress-nginx's default buckets: prometheus.DefBuckets, LinearBuckets(10, 10, 10), ExponentialBuckets(10, 10, 7)
local DEFAULT_BUCKETS = {
  { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 },
  { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 },
  { 10, 100, 1000, 10000, 100000, 1000000, 10000000 },
}

-- the histograms in slot order (slot 0 is the request count), each with its bucket set: time, length, size
local HISTOGRAMS = { 1, 1, 1, 1, 2, 2, 3 }

local bounds = {} -- bounds[h]: the upper bounds of histogram h
local offsets = {} -- offsets[h]: the slot of its first bucket; its sum follows its +Inf bucket
local slots = 1

local pending = {}
local npending = 0
local dropped = 0

-- parse reads "t1,t2;l1,l2;s1,s2" (the controller's flags); a missing or bad part keeps ingress-nginx's default
local function parse(spec)
  local sets = {}
  local i = 0
  for part in ((spec or "") .. ";"):gmatch("([^;]*);") do
    i = i + 1
    local list, ok = {}, part ~= ""
    for n in part:gmatch("[^,]+") do
      local v = tonumber(n)
      if v == nil or (#list > 0 and v <= list[#list]) then ok = false end
      list[#list + 1] = v
    end
    sets[i] = ok and list or nil
  end
  return sets
end

-- bucket_of(n) is a function(b, v): the index of the first of the n bounds b that v does not exceed, n + 1 when it
-- exceeds them all (NaN: 1, as a loop would). Written out as n comparisons, without a loop: a loop inside a function
-- makes LuaJIT abort every trace through it, and then leave the whole log phase to the interpreter.
local finders = {}
local function bucket_of(n)
  if finders[n] == nil then
    local src = { "local b, v = ...\n" }
    for i = 1, n do src[#src + 1] = ("if not (v > b[%d]) then return %d end\n"):format(i, i) end
    src[#src + 1] = ("return %d\n"):format(n + 1)
    finders[n] = assert(load(concat(src), "=monitor.bucket_of(" .. n .. ")"))
  end
  return finders[n]
end

local finder = {} -- finder[h]: histogram h's bucket_of

--- configure lays out the slots from the bucket spec (init_by_lua, in the master: workers inherit it).
function _M.configure(spec)
  local sets = parse(spec)
  slots = 1
  for h, set in ipairs(HISTOGRAMS) do
    bounds[h] = sets[set] or DEFAULT_BUCKETS[set]
    offsets[h] = slots
    finder[h] = bucket_of(#bounds[h])
    slots = slots + #bounds[h] + 2
  end
end

_M.configure(nil)

local function observe(row, h, v)
  if v == nil then return end
  local b = bounds[h]
  local at = offsets[h] + finder[h](b, v)
  row[at] = row[at] + 1
  at = offsets[h] + #b + 2
  row[at] = row[at] + v
end

--- log (log_by_lua) counts the request in this worker's table.
function _M.log()
  -- only the Ingress servers set it (a variable `set` elsewhere reads empty where it was not): the control channel,
  -- and a request nginx refused before reading its Host, count not
  local host = var("ia_host")
  if host == nil or host == "" then return end
  -- the request's method and status, and its time, through the Lua module's own calls: a variable read by name
  -- looks it up and formats it each time (the time, like $request_time, in whole ms of nginx's cached clock)
  local method = get_method()
  if not METHODS[method] then method = "OTHER" end
  local canary = "0"
  local alternative = var("ia_canary")
  if alternative ~= nil and alternative ~= "" and alternative == var("proxy_upstream_name") then canary = "1" end
  local route = var("ia_route")
  if route == nil or route == "" then route = "-" end
  local key = host .. " " .. route .. " " .. status_label(ngx.status) .. " " .. method .. " " .. canary
  local row = pending[key]
  if row == nil then
    if npending >= MAX_SETS then
      dropped = dropped + 1
      return
    end
    row = {}
    for i = 1, slots do row[i] = 0 end
    pending[key] = row
    npending = npending + 1
  end
  row[1] = row[1] + 1
  -- a list ("0.002, 0.004": nginx tried two peers) is not a number, and ingress-nginx leaves it out too
  local ms = floor((now() - start_time()) * 1000 + 0.5)
  observe(row, 1, (ms > 0 and ms or 0) / 1000)
  observe(row, 2, tonumber(var("upstream_response_time")))
  observe(row, 3, tonumber(var("upstream_connect_time")))
  observe(row, 4, tonumber(var("upstream_header_time")))
  observe(row, 5, tonumber(var("request_length")))
  local sent = tonumber(var("bytes_sent"))
  observe(row, 6, sent)
  observe(row, 7, sent)
end

local drop = handover.dropper(DROPPED, "request metrics")

-- flush hands this worker's deltas over as one list entry: a line per label set, `key<TAB>slot:value,…`
local function flush()
  local dict = ngx.shared.ia_metrics
  if dict == nil then return end
  local lost = dropped
  dropped = 0
  if npending == 0 then return drop(dict, lost, "too many label sets in one second") end
  local lines, n, requests = {}, 0, 0
  for key, row in pairs(pending) do
    local parts, m = {}, 0
    for i = 1, slots do
      local v = row[i]
      if v ~= 0 then
        m = m + 1
        parts[m] = (i - 1) .. ":" .. v
      end
    end
    n = n + 1
    lines[n] = key .. "\t" .. concat(parts, ",")
    requests = requests + row[1]
  end
  pending = {}
  npending = 0
  drop(dict, lost, "too many label sets in one second")
  if (dict:llen(LIST) or 0) >= MAX_ENTRIES then
    return drop(dict, requests, "the controller has not read them")
  end
  local ok, err = dict:rpush(LIST, concat(lines, "\n") .. "\n")
  if not ok then drop(dict, requests, "lua_shared_dict ia_metrics: " .. tostring(err)) end
end

--- init_worker starts the flush timer; its last run is the worker's exit (premature), so nothing counted is lost.
function _M.init_worker()
  local ok, err = ngx.timer.every(INTERVAL, flush)
  if not ok then ngx.log(ngx.ERR, "ingress-actors: no request metrics timer: ", err) end
end

--- drain takes up to `max` list entries (lua/ingress_actors/handover.lua): them, how many, how many are left, and the
--- requests dropped since the last drain.
function _M.drain(max)
  return handover.drain(ngx.shared.ia_metrics, LIST, DROPPED, max)
end

--- flush_now hands the deltas over at once (tests).
_M.flush = flush

return _M
