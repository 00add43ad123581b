# The smallest tool: no API calls, just input in and JSON out.
# Try: plimsoll-run demo --tool guests/examples/hello.py --input '{"name":"ada"}'
import datetime

return {"hello": (input or {}).get("name", "world"), "at": datetime.datetime.now(datetime.timezone.utc).isoformat()}
