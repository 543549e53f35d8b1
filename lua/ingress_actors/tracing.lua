-- OpenTelemetry server spans (issue 33), as ingress-nginx's tracing module makes them, without a tracing module:
-- a traced location sets $ia_otel ("trust": a valid incoming traceparent is the parent; "new": never), rewrite()
-- makes the span's context and the traceparent sent on ($ia_traceparent, $ia_tracestate: the location's
-- proxy_set_header), log() records a sampled span in a plain table of this worker (no shared-memory lock per
-- request), and a timer hands the spans over each second as one entry of a list in lua_shared_dict ia_spans, which the
-- controller drains through the control channel and exports (src/http/spans.ts). A span is one line of a string
-- buffer, written in the log phase: no table per span, no encoding pass (a Lua table of spans, JSON-encoded each
-- second, cost the worker about three times as much per span: issue 33's bench).
--
-- What a client sends is read, never copied: a traceparent is used only when it is exactly W3C's version-00 form
-- (55 characters, lowercase hex, version not ff, ids not all zero), and a tracestate only beside a trusted one and
-- when it is W3C's list (at most 32 members, 512 characters, keys and values of its grammar); otherwise the span
-- starts a new trace and no tracestate is sent. Ids come from a generator per worker seeded from /dev/urandom.
local buffer = require("string.buffer")
local ffi = require("ffi")
local handover = require("ingress_actors.handover")
local re_find = ngx.re.find
local byte, find, gsub = string.byte, string.find, string.gsub
local floor = math.floor
local bxor, lshift, rshift, rol, tobit, band = bit.bxor, bit.lshift, bit.rshift, bit.rol, bit.tobit, bit.band
local ffi_string, ffi_copy = ffi.string, ffi.copy
local accessors = require("ingress_actors.accessors")
-- reads compiled by LuaJIT (resty.core's are not: accessors.lua)
local now, start_time, get = accessors.now, accessors.start_time, accessors.var
local get_method, http_version = ngx.req.get_method, ngx.req.http_version
local var = ngx.var -- for writes

local _M = {}

local LIST = "spans"
local DROPPED = "dropped"
-- list entries waiting for the controller (each at most about HANDOVER_BYTES): past this, spans are dropped
local MAX_ENTRIES = 512
-- a worker hands its spans over when they reach this size, else each second: entries stay below the size from which
-- LuaJIT's and nginx's allocators map fresh memory for each string or buffer (128 KB), whose page faults cost more than
-- the spans' copying (issue 33's bench: a handover of a second's spans at once cost the worker about 3 µs a span)
local HANDOVER_BYTES = 64 * 1024
-- spans one worker holds between two flushes (about 250 bytes each, at most about 1.3 KB): past this, dropped (and
-- counted)
local MAX_SPANS = 20000
-- A span's line holds these values, separated by tabs, in this order (src/http/spans.ts reads them so): the
-- traceparent sent on, the trusted incoming one or "", start and end (milliseconds since the epoch), status, method,
-- $ia_host, $ia_route, request URI, scheme, peer, upstream address, HTTP version. None holds a tab or a newline:
-- the traceparents were checked, the host and route come from the validated configuration, nginx (1.21.1 on) refuses
-- control characters in a request line, and the rest nginx writes itself; the request URI is still checked, since
-- a line broken by one would cost its span (src/http/spans.ts refuses lines without their 13 values).
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

-- the sampler (init_worker): a new trace is sampled when its id's last 32 bits, unsigned, read below `bound`
-- (ratio * 2^32); `parent_based`: a trusted parent's sampled flag decides instead
local bound = 0
local parent_based = false

-- this worker's spans since the last flush (one line each: the buffer's memory is kept from one second to the next,
-- at most MAX_SPANS lines), how many, and how many were dropped
local lines, n, dropped = buffer.new(), 0, 0
-- hands the spans over (below: it needs the dropper)
local flush

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

-- The traceparent being made, written in place (no string per id): "00-" trace "-" span "-" flags; one string is
-- made of it per request, the value sent on.
local context = ffi.new("uint8_t[55]")
ffi_copy(context, "00-" .. ZERO_TRACE .. "-" .. ZERO_SPAN .. "-00", 55)
local DIGITS = ffi.new("const uint8_t[16]", { 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102 })

-- hex_at writes `x` as 8 lowercase hex digits at context[at]
local function hex_at(at, x)
  for i = at + 7, at, -1 do
    context[i] = DIGITS[band(x, 15)]
    x = rshift(x, 4)
  end
end

-- new_trace writes a new trace id (never all zero) into the context; its last 32 bits, unsigned
local function new_trace()
  local a, b, c, d = next32(), next32(), next32(), next32()
  if a == 0 and b == 0 and c == 0 and d == 0 then d = 1 end
  hex_at(3, a)
  hex_at(11, b)
  hex_at(19, c)
  hex_at(27, d)
  return d % 4294967296
end

-- new_span writes a new span id (never all zero) into the context
local function new_span()
  local a, b = next32(), next32()
  if a == 0 and b == 0 then b = 1 end
  hex_at(36, a)
  hex_at(44, b)
end

-- last32 is the trace id's last 32 bits in the context, unsigned (read from its hex digits)
local function last32()
  local v = 0
  for i = 27, 34 do
    local c = context[i]
    v = v * 16 + (c >= 97 and c - 87 or c - 48)
  end
  return v
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

-- valid says whether `traceparent` may be trusted, and its sampled flag
local function valid(traceparent)
  if traceparent == nil or #traceparent ~= 55 or not re_find(traceparent, TRACEPARENT, "jo") then return false end
  if byte(traceparent, 1) == 102 and byte(traceparent, 2) == 102 then return false end -- version ff
  if find(traceparent, ZERO_TRACE, 4, true) == 4 or find(traceparent, ZERO_SPAN, 37, true) == 37 then return false end
  local flags = byte(traceparent, 55)
  return true, band(flags >= 97 and flags - 87 or flags - 48, 1) == 1
end

--- trusted is the trace id, parent span id and sampled flag of `traceparent` when it is valid, else nil.
function _M.trusted(traceparent)
  local ok, sampled = valid(traceparent)
  if not ok then return nil end
  return traceparent:sub(4, 35), traceparent:sub(37, 52), sampled
end

--- valid_tracestate says whether `tracestate` may be sent on as it is.
function _M.valid_tracestate(tracestate)
  return tracestate ~= nil and #tracestate <= MAX_TRACESTATE and re_find(tracestate, TRACESTATE, "jo") ~= nil
end

local valid_tracestate = _M.valid_tracestate

--- rewrite (rewrite_by_lua, before the balancer's) starts the span of a traced location's request: its context in
--- $ia_traceparent (and a trusted tracestate in $ia_tracestate), and in $ia_otel what log() needs: "p" (sampled,
--- child of the trusted $http_traceparent) or "s" (sampled, a root) or "n" (not sampled), so that an internal
--- redirect does not start another.
function _M.rewrite()
  local mode = get("ia_otel")
  if mode ~= "trust" and mode ~= "new" then return end
  local incoming, trusted, sampled
  if mode == "trust" then
    incoming = get("http_traceparent")
    trusted, sampled = valid(incoming)
  end
  if trusted then
    ffi_copy(context, incoming, 35)
    context[0], context[1] = 48, 48 -- sent on as version 00
    if not parent_based then sampled = last32() < bound end
  else
    sampled = new_trace() < bound
  end
  new_span()
  context[54] = sampled and 49 or 48
  var.ia_traceparent = ffi_string(context, 55)
  if trusted then
    local state = get("http_tracestate")
    if state ~= nil and valid_tracestate(state) then var.ia_tracestate = state end
  end
  var.ia_otel = sampled and (trusted and "p" or "s") or "n"
end

-- Numbers as text without formatting one per request (a tenth of log()'s cost): statuses and HTTP versions from
-- tables, a time as its second's digits (made once a second) and its milliseconds' three.
local STATUS = {}
for code = 100, 599 do STATUS[code] = tostring(code) end
local VERSION = { [0.9] = "0.9", [1] = "1", [1.1] = "1.1", [2] = "2", [3] = "3" }
local MILLIS = {}
for ms = 0, 999 do MILLIS[ms] = string.format("%03d", ms) end
local second, second_text = -1, ""

-- put_ms writes `t` (seconds, in milliseconds) as milliseconds since the epoch, then a tab
local function put_ms(t)
  local ms = floor(t * 1000 + 0.5)
  local s = floor(ms / 1000)
  if s ~= second then second, second_text = s, tostring(s) end
  lines:put(second_text, MILLIS[ms - s * 1000], "\t")
end

--- log (log_by_lua) records a sampled span as one line of this worker's buffer; no string made but a long or odd
--- request URI's.
function _M.log()
  local mode = get("ia_otel")
  if mode ~= "s" and mode ~= "p" then return end
  if n >= MAX_SPANS then
    dropped = dropped + 1
    return
  end
  local target = get("request_uri") or ""
  if #target > MAX_TARGET then target = target:sub(1, MAX_TARGET) end
  if find(target, "[\t\n]") then target = gsub(target, "[\t\n]", " ") end
  lines:put(get("ia_traceparent"), "\t", mode == "p" and get("http_traceparent") or "", "\t")
  put_ms(start_time())
  put_ms(now())
  local status = ngx.status
  lines:put(STATUS[status] or status, "\t", get_method(), "\t", get("ia_host") or "", "\t", get("ia_route") or "", "\t",
    target, "\t", get("scheme"), "\t", get("remote_addr") or "", "\t", get("upstream_addr") or "", "\t",
    VERSION[http_version() or 0] or "0", "\n")
  n = n + 1
  if #lines >= HANDOVER_BYTES then flush() end
end

local drop = handover.dropper(DROPPED, "spans")

-- flush hands this worker's spans over as one list entry: their lines
flush = function()
  local dict = ngx.shared.ia_spans
  if dict == nil then return end
  local lost, count = dropped, n
  dropped = 0
  drop(dict, lost, "over " .. MAX_SPANS .. " spans in one second")
  if n == 0 then return end
  local text = lines:tostring()
  lines:reset()
  n = 0
  if (dict:llen(LIST) or 0) >= MAX_ENTRIES then return drop(dict, count, "the controller has not read them") end
  local ok, err = dict:rpush(LIST, text)
  if not ok then drop(dict, count, "lua_shared_dict ia_spans: " .. tostring(err)) end
end

--- init_worker (init_worker_by_lua) takes the sampler (the share of new traces sampled; whether a trusted parent's
--- flag decides), seeds this worker's ids and starts the flush timer; its last run is the worker's exit.
function _M.init_worker(ratio, parent)
  bound = floor(ratio * 4294967296) -- 2^32
  if ratio >= 1 then bound = 4294967296 end
  parent_based = parent == true
  if not seed() then
    ngx.log(ngx.ERR, "ingress-actors: no /dev/urandom for span ids: seeded from the clock and pid")
    s0, s1, s2, s3 = tobit(floor(now() * 1000) % 4294967296), tobit(ngx.worker.pid()), 0x9e3779b9, 0x7f4a7c15
  end
  local ok, err = ngx.timer.every(INTERVAL, flush)
  if not ok then ngx.log(ngx.ERR, "ingress-actors: no span timer: ", err) end
end

--- drain takes up to `max` list entries (lua/ingress_actors/handover.lua): them, how many, how many are left, the spans
--- dropped since the last drain.
function _M.drain(max)
  return handover.drain(ngx.shared.ia_spans, LIST, DROPPED, max)
end

--- flush_now hands the spans over at once (tests).
_M.flush = flush
--- trace_id and span_id are new ids as rewrite() makes them (tests)
function _M.trace_id()
  new_trace()
  return ffi_string(context + 3, 32)
end

function _M.span_id()
  new_span()
  return ffi_string(context + 36, 16)
end

return _M
