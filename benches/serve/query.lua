-- POST /v1/indexes/NAME/query?fingerprint=F, F cycling through $NEARDUP_QUERIES.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local common = require("common")
local paths = {}
local i = 0

function init(args)
  local base = wrk.path
  for _, f in ipairs(common.lines(os.getenv("NEARDUP_QUERIES"))) do
    paths[#paths + 1] = base .. "?fingerprint=" .. common.encode(f)
  end
  i = math.random(1, #paths)
end

function request()
  i = i % #paths + 1
  return wrk.format("POST", paths[i], nil, "")
end
