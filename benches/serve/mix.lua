-- 90 % fingerprint queries, 10 % single durable inserts, against /v1/indexes/NAME.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local common = require("common")
local queries = {}
local counter = 0
-- thread_id: a global, set by common.setup before init runs.
setup = common.setup

function init(args)
  math.randomseed(os.time() + (thread_id or 0) * 7919)
  for _, f in ipairs(common.lines(os.getenv("NEARDUP_QUERIES"))) do
    queries[#queries + 1] = wrk.path .. "/query?fingerprint=" .. common.encode(f)
  end
end

function request()
  counter = counter + 1
  if counter % 10 == 0 then
    return wrk.format("POST", wrk.path .. "/fingerprints", common.token_header(),
      common.insert_body("mix", thread_id, counter))
  end
  return wrk.format("POST", queries[math.random(1, #queries)], nil, "")
end
