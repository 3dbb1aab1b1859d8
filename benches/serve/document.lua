-- POST /v1/indexes/NAME/query with the HTML page of $NEARDUP_BODY.
local f = io.open(os.getenv("NEARDUP_BODY"), "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "text/html"
