-- OpenTelemetry server spans (issue 33), as ingress-nginx's tracing module makes them, without a tracing module:
-- a traced location sets $ia_otel ("trust": a valid incoming traceparent is the parent; "new": never), rewrite()
-- makes the span's context and the traceparent sent on ($ia_traceparent, $ia_tracestate: the location's
-- proxy_set_header), log() records a sampled span in a plain table of this worker (no shared-memory lock per
-- request), and a timer hands the spans over each second as one entry of a list in lua_shared_dict ia_spans, which the
-- controller drains through the control channel and exports (src/http/spans.ts).
--
-- What a client sends is read, never copied: a traceparent is used only when it is exactly W3C's version-00 form
-- (55 characters, lowercase hex, version not ff, ids not all zero), and a tracestate only beside a trusted one and
-- when it is W3C's list (at most 32 members, 512 characters, keys and values of its grammar); otherwise the span
-- starts a new trace and no tracestate is sent. Ids come from a generator per worker seeded from /dev/urandom.
local cjson = require("cjson.safe")
local re_find = ngx.re.find
local sub, byte = string.sub, string.byte
local floor, concat = math.floor, table.concat
local bxor, lshift, rol, tobit, tohex, band = bit.bxor, bit.lshift, bit.rol, bit.tobit, bit.tohex, bit.band
local now, start_time, get_method, http_version = ngx.now, ngx.req.start_time, ngx.req.get_method, ngx.req.http_version
local var = ngx.var

local _M = {}

local LIST = "spans"
local DROPPED = "dropped"
-- list entries waiting for the controller (one per worker per second with spans): past this, spans are dropped
local MAX_ENTRIES = 120
-- spans one worker holds between two flushes (about 250 bytes each once encoded): past this, dropped (and counted)
local MAX_SPANS = 20000
-- values per span in the handed-over list, in this order (src/http/spans.ts reads them so)
local FIELDS = 14
local MAX_TARGET = 1024
local MAX_TRACESTATE = 512
local INTERVAL = 1

local TRACEPARENT = [[^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$]]
-- W3C's list-member, with optional blanks around it: a key (simple, or tenant@system) = a value of printable ASCII
-- without , and = that does not end in a space
local MEMBER = [[[ \t]*(?:[a-z0-9][a-z0-9_*/-]{0,240}@[a-z][a-z0-9_*/-]{0,13}|[a-z][a-z0-9_*/-]{0,255})]]
  .. [[=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e][ \t]*]]
local TRACESTATE = "^" .. MEMBER .. "(?:," .. MEMBER .. "){0,31}$"
local ZERO_TRACE = "00000000000000000000000000000000"
local ZERO_SPAN = "0000000000000000"

-- the sampler (init_worker): a new trace is sampled when its id's last 52 bits read below `bound` (ratio * 2^52);
-- `parent_based`: a trusted parent's sampled flag decides instead
local bound = 0
local parent_based = false

local spans, n, dropped, warned = {}, 0, 0, false

-- xoshiro128** on 32-bit lanes (bit ops wrap like uint32; a product of a lane and 5 or 9 stays exact in a double)
local s0, s1, s2, s3 = 1, 2, 3, 4

local function next32()
  local result = tobit(rol(tobit(s1 * 5), 7) * 9)
  local t = lshift(s1, 9)
  s2 = bxor(s2, s0)
  s3 = bxor(s3, s1)
  s1 = bxor(s1, s2)
  s0 = bxor(s0, s3)
  s2 = bxor(s2, t)
  s3 = rol(s3, 11)
  return result
end

local function span_id()
  local id = tohex(next32(), 8) .. tohex(next32(), 8)
  if id == ZERO_SPAN then return span_id() end
  return id
end

local function trace_id()
  local id = tohex(next32(), 8) .. tohex(next32(), 8) .. tohex(next32(), 8) .. tohex(next32(), 8)
  if id == ZERO_TRACE then return trace_id() end
  return id
end

-- seed reads 16 bytes of /dev/urandom into the generator's lanes; false when it cannot
local function seed()
  local f = io.open("/dev/urandom", "rb")
  if f == nil then return false end
  local b = f:read(16)
  f:close()
  if b == nil or #b ~= 16 then return false end
  local lanes = {}
  for i = 0, 3 do
    local a, c, d, e = byte(b, i * 4 + 1, i * 4 + 4)
    lanes[i + 1] = tobit(a * 16777216 + c * 65536 + d * 256 + e)
  end
  s0, s1, s2, s3 = lanes[1], lanes[2], lanes[3], lanes[4]
  -- an all-zero state would stay zero
  if s0 == 0 and s1 == 0 and s2 == 0 and s3 == 0 then s0 = 1 end
  return true
end

-- sampled_id says whether the sampler samples a new trace of id `id`
local function sampled_id(id)
  return tonumber(sub(id, 20), 16) < bound
end

--- trusted is the trace id, parent span id and sampled flag of `traceparent` when it is valid, else nil.
function _M.trusted(traceparent)
  if traceparent == nil or #traceparent ~= 55 or not re_find(traceparent, TRACEPARENT, "jo") then return nil end
  if sub(traceparent, 1, 2) == "ff" then return nil end
  local trace, parent = sub(traceparent, 4, 35), sub(traceparent, 37, 52)
  if trace == ZERO_TRACE or parent == ZERO_SPAN then return nil end
  return trace, parent, band(tonumber(sub(traceparent, 54, 55), 16), 1) == 1
end

--- valid_tracestate says whether `tracestate` may be sent on as it is.
function _M.valid_tracestate(tracestate)
  return tracestate ~= nil and #tracestate <= MAX_TRACESTATE and re_find(tracestate, TRACESTATE, "jo") ~= nil
end

local trusted, valid_tracestate = _M.trusted, _M.valid_tracestate

--- rewrite (rewrite_by_lua, before the balancer's) starts the span of a traced location's request: its context in
--- $ia_traceparent (and a trusted tracestate in $ia_tracestate), and in $ia_otel what log() needs: "s" and the
--- parent's span id when sampled, "n" when not (so an internal redirect does not start another).
function _M.rewrite()
  local mode = var.ia_otel
  if mode ~= "trust" and mode ~= "new" then return end
  local trace, parent, sampled
  if mode == "trust" then trace, parent, sampled = trusted(var.http_traceparent) end
  if trace == nil then
    trace = trace_id()
    sampled = sampled_id(trace)
  elseif not parent_based then
    sampled = sampled_id(trace)
  end
  var.ia_traceparent = "00-" .. trace .. "-" .. span_id() .. (sampled and "-01" or "-00")
  if parent then
    local state = var.http_tracestate
    if state ~= nil and valid_tracestate(state) then var.ia_tracestate = state end
  end
  if sampled then
    var.ia_otel = parent and ("s" .. parent) or "s"
  else
    var.ia_otel = "n"
  end
end

--- log (log_by_lua) records a sampled span in this worker's list: FIELDS values, no table of its own.
function _M.log()
  local mode = var.ia_otel
  if mode == nil or byte(mode, 1) ~= 115 then return end -- "s"
  if n >= MAX_SPANS * FIELDS then
    dropped = dropped + 1
    return
  end
  local context = var.ia_traceparent
  local target = var.request_uri or ""
  if #target > MAX_TARGET then target = sub(target, 1, MAX_TARGET) end
  local s = spans
  s[n + 1] = sub(context, 4, 35)
  s[n + 2] = sub(context, 37, 52)
  s[n + 3] = #mode == 17 and sub(mode, 2) or ""
  s[n + 4] = start_time()
  s[n + 5] = now()
  s[n + 6] = ngx.status
  s[n + 7] = get_method()
  s[n + 8] = var.ia_host or ""
  s[n + 9] = var.ia_route or ""
  s[n + 10] = target
  s[n + 11] = var.scheme
  s[n + 12] = var.remote_addr or ""
  s[n + 13] = var.upstream_addr or ""
  s[n + 14] = http_version() or 0
  n = n + FIELDS
end

local function drop(dict, count, why)
  if count == 0 then return end
  dict:incr(DROPPED, count, 0)
  if not warned then
    warned = true
    ngx.log(ngx.WARN, "ingress-actors: spans dropped (", why, "); said once per worker")
  end
end

-- flush hands this worker's spans over as one list entry: a JSON array of FIELDS values per span
local function flush()
  local dict = ngx.shared.ia_spans
  if dict == nil then return end
  local lost, count, list = dropped, n / FIELDS, spans
  dropped = 0
  drop(dict, lost, "over " .. MAX_SPANS .. " spans in one second")
  if n == 0 then return end
  spans, n = {}, 0
  if (dict:llen(LIST) or 0) >= MAX_ENTRIES then return drop(dict, count, "the controller has not read them") end
  local text = cjson.encode(list)
  if text == nil then return drop(dict, count, "could not encode them") end
  local ok, err = dict:rpush(LIST, text)
  if not ok then drop(dict, count, "lua_shared_dict ia_spans: " .. tostring(err)) end
end

--- init_worker (init_worker_by_lua) takes the sampler (the share of new traces sampled; whether a trusted parent's
--- flag decides), seeds this worker's ids and starts the flush timer; its last run is the worker's exit.
function _M.init_worker(ratio, parent)
  bound = floor(ratio * 4503599627370496) -- 2^52
  if ratio >= 1 then bound = 4503599627370496 end
  parent_based = parent == true
  if not seed() then
    ngx.log(ngx.ERR, "ingress-actors: no /dev/urandom for span ids: seeded from the clock and pid")
    s0, s1, s2, s3 = tobit(floor(now() * 1000) % 4294967296), tobit(ngx.worker.pid()), 0x9e3779b9, 0x7f4a7c15
  end
  local ok, err = ngx.timer.every(INTERVAL, flush)
  if not ok then ngx.log(ngx.ERR, "ingress-actors: no span timer: ", err) end
end

-- one answer's text at most (the controller asks again while entries are left)
local DRAIN_BYTES = 4 * 1024 * 1024

--- drain takes up to `max` list entries (and about DRAIN_BYTES), one a line; how many are left; the spans dropped
--- since the last drain.
function _M.drain(max)
  local dict = ngx.shared.ia_spans
  if dict == nil then return "", 0, 0 end
  local parts, count, size = {}, 0, 0
  while count < max and size < DRAIN_BYTES do
    local v = dict:lpop(LIST)
    if v == nil then break end
    count = count + 1
    parts[count] = v
    size = size + #v
  end
  local lost = dict:get(DROPPED) or 0
  if lost > 0 then dict:incr(DROPPED, -lost) end
  parts[count + 1] = ""
  return concat(parts, "\n"), dict:llen(LIST) or 0, lost
end

--- flush_now hands the spans over at once (tests).
_M.flush = flush
--- new ids as rewrite() makes them (tests)
_M.trace_id, _M.span_id = trace_id, span_id

return _M
