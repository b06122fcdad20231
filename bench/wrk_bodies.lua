-- wrk script: POST each line of BODIES (a file of JSON bodies) in turn.
local bodies = {}
local next_body = 1

function init(args)
  for line in io.lines(os.getenv("BODIES")) do
    bodies[#bodies + 1] = line
  end
  -- Threads start at different offsets so they do not send the same bodies.
  next_body = (tonumber(args[1] or "0") % #bodies) + 1
end

function request()
  local body = bodies[next_body]
  next_body = next_body % #bodies + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end

-- With DELAY_MS set, each connection waits that long before each request:
-- a load of about connections * 1000 / DELAY_MS requests/s.
local delay_ms = tonumber(os.getenv("DELAY_MS") or "")
if delay_ms then
  function delay()
    return delay_ms
  end
end
