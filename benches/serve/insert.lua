-- POST /v1/indexes/NAME/fingerprints: one NDJSON line a request, a new id each time; durable when answered.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local common = require("common")
local counter = 0
local thread_id = 0
local threads = 0

function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

function init(args)
  math.randomseed(os.time() + thread_id * 7919)
end

function request()
  counter = counter + 1
  local body = string.format('{"id":"ins-%d-%d-%d","fingerprint":"%s"}\n', os.time(), thread_id, counter,
    common.random_fingerprint())
  return wrk.format("POST", nil, { ["Authorization"] = "Bearer " .. os.getenv("NEARDUP_TOKEN") }, body)
end
