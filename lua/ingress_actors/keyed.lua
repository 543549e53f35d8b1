-- Tables stored entry by entry in the shared dict ia_config, so that a push costs what it changes, on both sides:
-- "<p>:<key>" holds an entry's JSON and "<p>s:<key>" the generation of the push that wrote it; "<name>_version" the
-- version pushed, "<name>_generation" is bumped by every applied push. A push ({version, base, set, remove}) is a
-- delta on the version nginx holds (409 otherwise, nothing changed) or, with `base` null, a full replace. Entries are
-- checked and refused alone: a refused entry keeps what it had. A worker decodes an entry again only when its stamp
-- moved (reader below).
--
-- A spec names one table: `name` (its version, generation and lock keys; the answer's `table`), `prefix`, `key(e)`
-- (the entry's key or nil), `entry` (what an entry is, for reasons), `key_ok(k)` and `bad_key` (what a key that is none is refused with), `check(e)` (nil or a
-- one-line reason), `max` (entries a list holds at most), and optionally `index`: { { field, prefix, what } } for
-- names an entry is also found by (a certificate's hosts): each name is served by one entry, "<prefix>:<name>" -> key.
local cjson = require("cjson.safe")
local validate = require("ingress_actors.validate")

local _M = {}

local null = cjson.null

-- a refusal names its entry by key; keys that passed key_ok are data, others go through validate.short
local MAX_REFUSED = validate.MAX_REFUSED

-- stored_keys lists the keys of `prefix` stored now: the one walk over the dict's keys, on a full replace (which sends
-- the whole table anyway)
local function stored_keys(dict, prefix)
  local keys, head, n = {}, prefix .. ":", #prefix + 1
  for _, k in ipairs(dict:get_keys(0)) do
    if k:sub(1, n) == head then keys[#keys + 1] = k:sub(n + 1) end
  end
  return keys
end

--- decode_push decodes a push's body and checks what is not checked entry by entry: the push, or nil and a one-line
--- reason (nothing may change then).
function _M.decode_push(body, max)
  local t = cjson.decode(body)
  if type(t) ~= "table" then return nil, "the body is not a JSON object" end
  local ok, extra = validate.only_keys(t, { version = true, base = true, set = true, remove = true })
  if not ok then return nil, "unknown field " .. validate.short(extra) end
  if not validate.version(t.version) then return nil, "version is not 1.." .. validate.limits.version .. " of [A-Za-z0-9_.:-]" end
  -- null, never absent: a push that forgot its base must not replace the whole table
  if t.base == null then
    t.base = nil
  elseif not validate.version(t.base) then
    return nil, "base is not null or a version"
  end
  for _, list in ipairs({ "set", "remove" }) do
    -- an empty list decodes as {}: an object with keys is not a list
    if not validate.is_array(t[list]) then return nil, list .. " is not an array" end
    if #t[list] > max then return nil, list .. " has more than " .. max .. " entries" end
  end
  return t
end

-- names_of is an entry's names of one index field (an array of strings, as check() made sure)
local function names_of(entry, field)
  local names = type(entry) == "table" and entry[field]
  return type(names) == "table" and names or {}
end

-- claim_names settles the index of accepted entries: a name is served by one entry. Names of entries rewritten or
-- removed are released; an accepted entry naming a name another entry keeps is refused (and then keeps its own
-- names: settled again until nothing more is refused, once in practice). Returns the released names per index.
local function claim_names(dict, spec, accepted, removes, refuse)
  local old = {}
  local function old_entry(key)
    if old[key] == nil then old[key] = cjson.decode(dict:get(spec.prefix .. ":" .. key) or "null") or false end
    return old[key]
  end
  while true do
    local leaving = {}
    for _, a in ipairs(accepted) do
      if not a.refused then leaving[a.key] = true end
    end
    for _, key in ipairs(removes) do leaving[key] = true end
    local conflict = false
    for _, ix in ipairs(spec.index) do
      local claimed = {}
      for _, a in ipairs(accepted) do
        if not a.refused then
          for _, n in ipairs(names_of(a.entry, ix.field)) do
            local owner = claimed[n]
            if owner == nil then
              owner = dict:get(ix.prefix .. ":" .. n)
              if owner ~= nil and leaving[owner] then owner = nil end
            end
            if owner ~= nil and owner ~= a.key then
              a.refused = true
              refuse(a.key, ix.what .. " " .. n .. " is served by another " .. spec.entry .. " (" .. owner .. ")")
              conflict = true
              break
            end
            claimed[n] = a.key
          end
        end
      end
    end
    if not conflict then break end
  end
  local released = {}
  for i, ix in ipairs(spec.index) do
    local names = {}
    local function release(key)
      local e = old_entry(key)
      for _, n in ipairs(names_of(e, ix.field)) do names[#names + 1] = { n, key } end
    end
    for _, a in ipairs(accepted) do
      if not a.refused then release(a.key) end
    end
    for _, key in ipairs(removes) do release(key) end
    released[i] = names
  end
  return released
end

-- fail leaves no version (some entries are written, some not: no version describes that, so the controller's next
-- delta is answered 409 until it sends the whole table) and moves the generation (workers read what was written)
local function fail(dict, spec, what, err)
  dict:delete(spec.name .. "_version")
  dict:incr(spec.name .. "_generation", 1, 0)
  ngx.log(ngx.ERR, "ingress-actors: could not store ", what, " of the ", spec.name, " table: ", err)
  return 507, "lua_shared_dict ia_config: " .. tostring(err)
end

-- apply applies a decoded push; returns the answer's status and body
local function apply(dict, spec, t)
  local held = dict:get(spec.name .. "_version")
  if t.base ~= nil and t.base ~= held then
    return 409, "base " .. t.base .. " is not the version nginx holds (" .. tostring(held or "none") .. ")"
  end
  local refused = {}
  local function refuse(key, reason)
    if #refused < MAX_REFUSED then
      refused[#refused + 1] = { table = spec.name, key = #key <= 640 and key or validate.short(key), reason = reason }
    end
  end
  -- what to remove first, so an entry both set and removed is known when it is met in `set`
  local to_remove = {}
  for i, key in ipairs(t.remove) do
    if spec.key_ok(key) then
      to_remove[key] = true
    else
      refuse("remove #" .. i, validate.short(key) .. " " .. spec.bad_key)
    end
  end
  local named, accepted = {}, {}
  for i, e in ipairs(t.set) do
    local key = spec.key(e)
    if key == nil then
      refuse("#" .. i, spec.key_field .. " " .. validate.short(type(e) == "table" and e[spec.key_field] or nil) .. " " ..
        spec.bad_key)
    elseif named[key] then
      refuse(key, "named twice")
    else
      named[key] = true
      -- set and removed in one push: neither, it keeps what it had
      local why = to_remove[key] and "named in set and in remove" or spec.check(e)
      local json
      if why == nil then
        json = cjson.encode(e)
        if json == nil then why = "does not encode" end
      end
      if why then refuse(key, why) else accepted[#accepted + 1] = { key = key, entry = e, json = json } end
    end
  end
  local removes = {}
  for key in pairs(to_remove) do
    if not named[key] then removes[#removes + 1] = key end
  end
  if t.base == nil then
    -- a full replace: every stored entry it does not name goes (a refused one keeps what it had)
    for _, key in ipairs(stored_keys(dict, spec.prefix)) do
      if not named[key] then removes[#removes + 1] = key end
    end
  end
  local released = spec.index and claim_names(dict, spec, accepted, removes, refuse)
  -- entries first, the version and the generation last: a worker that sees the new generation reads the new entries;
  -- an entry's JSON before its stamp (the reader reads them the other way round)
  local generation = (dict:get(spec.name .. "_generation") or 0) + 1
  local entry_key, stamp_key = spec.prefix .. ":", spec.prefix .. "s:"
  local writes = 0
  for _, a in ipairs(accepted) do
    if not a.refused then
      local ok, err = dict:safe_set(entry_key .. a.key, a.json)
      if ok then ok, err = dict:safe_set(stamp_key .. a.key, generation) end
      if not ok then
        -- not a new JSON under an old stamp, which a worker would take for what it decoded before
        dict:delete(stamp_key .. a.key)
        dict:delete(entry_key .. a.key)
        return fail(dict, spec, a.key, err)
      end
      writes = writes + 1
    end
  end
  for _, key in ipairs(removes) do
    dict:delete(stamp_key .. key)
    dict:delete(entry_key .. key)
  end
  for i, ix in ipairs(spec.index or {}) do
    -- a released name goes only where it still names the entry that released it, before the new claims
    for _, r in ipairs(released[i]) do
      local k = ix.prefix .. ":" .. r[1]
      if dict:get(k) == r[2] then dict:delete(k) end
    end
    for _, a in ipairs(accepted) do
      if not a.refused then
        for _, n in ipairs(names_of(a.entry, ix.field)) do
          local ok, err = dict:safe_set(ix.prefix .. ":" .. n, a.key)
          if not ok then return fail(dict, spec, ix.what .. " " .. n, err) end
        end
      end
    end
  end
  local ok, err = dict:safe_set(spec.name .. "_version", t.version)
  if not ok then return fail(dict, spec, "the version", err) end
  dict:incr(spec.name .. "_generation", 1, 0)
  for _, r in ipairs(refused) do
    ngx.log(ngx.WARN, "ingress-actors: refused the ", spec.name, " entry ", validate.short(r.key), ": ", r.reason)
  end
  ngx.log(ngx.NOTICE, "ingress-actors: ", spec.name, " ", t.version, " in force (", t.base and "delta" or "full", ", ",
    writes, " set, ", #removes, " removed, ", #refused, " refused)")
  return 201, validate.answer(t.version, refused)
end

--- push applies a push's body to the table `spec` names: the answer's status and body. Two pushes of one table never
--- interleave their entries (a lock that expires should a worker die holding it).
function _M.push(dict, spec, body)
  local t, why = _M.decode_push(body, spec.max)
  if not t then return 400, why end
  local lock = spec.name .. "_lock"
  local locked, lock_err = dict:add(lock, true, 30)
  if not locked then
    return 409, "another " .. spec.name .. " push is being applied (" .. tostring(lock_err) .. ")"
  end
  local ok, status, text = pcall(apply, dict, spec, t)
  dict:delete(lock)
  if not ok then
    ngx.log(ngx.ERR, "ingress-actors: a ", spec.name, " push failed: ", status)
    return 500, "the push failed; see nginx's error log"
  end
  return status, text
end

--- reader reads one keyed table in a worker. Per worker, for one push generation, the entries read so far are kept
--- (bounded by the stored table: an absent key is never kept, so keys a client chooses cost a lookup, never memory);
--- after a push, an entry is kept while its stamp is the stored one, so a push costs each worker the entries it
--- changed. `prepare(entry, key)`, when given, makes what is kept of a decoded entry (nil: none), once per stamp.
function _M.reader(dict, name, prefix, prepare)
  local generation_key, entry_key, stamp_key = name .. "_generation", prefix .. ":", prefix .. "s:"
  local decode = cjson.decode
  local held = false
  local records, stale = {}, {}
  local decoded = 0
  local r = {}

  --- fresh reads the generation (once per request will do): true when a push came since the last call, which drops
  --- what this worker read (an entry whose stamp stays is taken over at its next read)
  function r.fresh()
    local generation = dict:get(generation_key)
    if generation == held then return false end
    held, stale, records = generation, records, {}
    return true
  end

  --- entry is the stored entry `key`, prepared, or nil, as of the generation fresh() last read
  function r.entry(key)
    local e = records[key]
    if e ~= nil then return e end
    -- the stamp before the JSON: the push writes the JSON first, so a stamp read is never newer than the JSON after
    local stamp = dict:get(stamp_key .. key)
    if stamp == nil then return nil end
    e = stale[key]
    if not (e and e.stamp == stamp) then
      local raw = dict:get(entry_key .. key)
      if raw == nil then return nil end
      decoded = decoded + 1
      e = decode(raw)
      if prepare then
        e = prepare(e, key)
      elseif type(e) ~= "table" then
        e = nil
      end
      if e == nil then return nil end
      e.stamp = stamp
    end
    records[key] = e
    return e
  end

  --- get is the stored entry `key` as of now
  function r.get(key)
    r.fresh()
    return r.entry(key)
  end

  --- find is the entry an index name (a certificate's host) names, or nil; names are not kept per worker (a client
  --- chooses them), entries are
  function r.find(index_prefix, n)
    local key = dict:get(index_prefix .. ":" .. n)
    return key and r.get(key) or nil
  end

  --- decoded is how many entries this worker has decoded (tests: a push costs the entries it changed)
  function r.decoded()
    return decoded
  end

  return r
end

return _M
