-- POST /v1/indexes/NAME/fingerprints: one NDJSON line a request, a new id each time; durable when answered.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local common = require("common")
local counter = 0
-- thread_id: a global, set by common.setup before init runs.
setup = common.setup

function init(args)
  math.randomseed(os.time() + (thread_id or 0) * 7919)
end

function request()
  counter = counter + 1
  return wrk.format("POST", nil, common.token_header(), common.insert_body("ins", thread_id, counter))
end
