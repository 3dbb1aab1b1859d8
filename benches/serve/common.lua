-- Shared by the wrk scripts: the query list (one per line) from $NEARDUP_QUERIES, and a URL-encoder.
local M = {}

function M.lines(path)
  local out = {}
  for line in io.lines(path) do
    if #line > 0 then out[#out + 1] = line end
  end
  return out
end

function M.encode(s)
  return (s:gsub("[^%w%-_%.~]", function(c) return string.format("%%%02X", string.byte(c)) end))
end

-- A fingerprint of random bits, in simhash-doc-v1's text form (13 base32 characters, the last one even).
local alphabet = "abcdefghijklmnopqrstuvwxyz234567"
function M.random_fingerprint()
  local t = {}
  for i = 1, 12 do
    local n = math.random(1, 32)
    t[i] = alphabet:sub(n, n)
  end
  local n = 2 * math.random(0, 15) + 1
  t[13] = alphabet:sub(n, n)
  return "simhash-doc-v1:" .. table.concat(t)
end

-- Each wrk thread learns its number, so the ids it inserts never collide with another thread's.
local threads = 0
function M.setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

-- One NDJSON line for POST /v1/indexes/NAME/fingerprints: a fresh id and a random fingerprint.
function M.insert_body(prefix, thread_id, counter)
  return string.format('{"id":"%s-%d-%d-%d","fingerprint":"%s"}\n', prefix, os.time(), thread_id, counter,
    M.random_fingerprint())
end

function M.token_header()
  return { ["Authorization"] = "Bearer " .. os.getenv("NEARDUP_TOKEN") }
end

return M
