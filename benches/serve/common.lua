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

return M
