-- 90 % fingerprint queries, 10 % single durable inserts, against /v1/indexes/NAME.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local common = require("common")
local queries = {}
local counter = 0
local thread_id = 0
local threads = 0

function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

function init(args)
  math.randomseed(os.time() + thread_id * 7919)
  for _, f in ipairs(common.lines(os.getenv("NEARDUP_QUERIES"))) do
    queries[#queries + 1] = wrk.path .. "/query?fingerprint=" .. common.encode(f)
  end
end

function request()
  counter = counter + 1
  if counter % 10 == 0 then
    local body = string.format('{"id":"mix-%d-%d-%d","fingerprint":"%s"}\n', os.time(), thread_id, counter,
      common.random_fingerprint())
    return wrk.format("POST", wrk.path .. "/fingerprints",
      { ["Authorization"] = "Bearer " .. os.getenv("NEARDUP_TOKEN") }, body)
  end
  return wrk.format("POST", queries[math.random(1, #queries)], nil, "")
end
