-- Generated from src/model/table-schema.ts (test/unit/table-schema.test.ts keeps it equal: UPDATE_SCHEMA=1 to
-- write it); do not edit. The bounds and closed sets of the pushed tables, the same on both sides.
return {
  limits = {
    version = 128,
    backendName = 255,
    hashKey = 255,
    host = 253,
    serverKey = 310,
    routeLabel = 320,
    path = 2064,
    headerName = 256,
    value = 4096,
    weight = 1000000,
    timeoutMs = 400000000,
    mirrors = 2,
    secret = 322,
    pem = 1048576,
  },
  balance = { round_robin = true, ewma = true, chash = true, sticky = true },
  pathTypes = { Exact = true, PathPrefix = true, RegularExpression = true },
  valueTypes = { Exact = true, RegularExpression = true },
  modifierTypes = { ReplaceFullPath = true, ReplacePrefixMatch = true },
  methods = { GET = true, HEAD = true, POST = true, PUT = true, DELETE = true, CONNECT = true, OPTIONS = true, TRACE = true, PATCH = true },
  redirectCodes = { [301] = true, [302] = true, [303] = true, [307] = true, [308] = true },
}
