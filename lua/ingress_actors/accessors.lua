-- The request's variables and times, read as resty.core reads them but in a form LuaJIT compiles. resty.core's own
-- (ngx.var's __index, ngx.now, ngx.req.start_time) return the C call's result through a tail call of ffi.string or
-- tonumber; LuaJIT cannot end a trace that starts in such a function ("NYI: return to lower frame"), and after a few
-- tries it blacklists the function, after which every trace that reaches it aborts too: the router, the balancer and
-- the request metrics then ran in the interpreter, where each FFI call costs about 0.4 µs instead of 0.02 (issue 29;
-- test/controller/request-path-jit.test.ts). These make the same C calls and keep the result in a local first.
local ffi = require("ffi")
local base = require("resty.core.base")
-- the C declarations these calls use are resty.core's (ffi.cdef cannot declare a function twice)
require("resty.core.var")
require("resty.core.time")
require("resty.core.request")

local C = ffi.C
local ffi_str = ffi.string
local get_request, get_string_buf = base.get_request, base.get_string_buf
local var_get, ffi_now, req_start_time = C.ngx_http_lua_ffi_var_get, C.ngx_http_lua_ffi_now,
  C.ngx_http_lua_ffi_req_start_time

local NGX_OK, NGX_DECLINED = 0, -5

local value = ffi.new("char *[1]")
local value_len = ffi.new("size_t[1]")
local errmsg = base.get_errmsg_ptr()

local _M = {}

--- var is the request's variable `name` (a string literal of the caller's), or nil when it has no value: ngx.var[name].
function _M.var(name)
  local r = get_request()
  if not r then error("no request found", 2) end
  local rc = var_get(r, name, #name, get_string_buf(#name), 0, value, value_len, errmsg)
  if rc == NGX_OK then
    local v = ffi_str(value[0], value_len[0])
    return v
  end
  if rc == NGX_DECLINED then return nil end
  error(ffi_str(errmsg[0]), 2)
end

--- now is nginx's cached time in seconds, with milliseconds: ngx.now().
function _M.now()
  local t = ffi_now()
  return t
end

--- start_time is when nginx read the request's first byte, in seconds with milliseconds: ngx.req.start_time().
function _M.start_time()
  local r = get_request()
  if not r then error("no request found", 2) end
  local t = req_start_time(r)
  return t
end

return _M
