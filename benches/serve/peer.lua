-- POST / with a JSON list of 128 hash values (the peer server's query), cycling through $NEARDUP_QUERIES.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local common = require("common")
local bodies = {}
local i = 0

function init(args)
  bodies = common.lines(os.getenv("NEARDUP_QUERIES"))
  i = math.random(1, #bodies)
end

function request()
  i = i % #bodies + 1
  return wrk.format("POST", "/", { ["Content-Type"] = "application/json" }, bodies[i])
end
