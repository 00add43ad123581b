// The smallest tool: no API calls, just input in and JSON out.
return { hello: input && input.name ? input.name : "world", at: new Date().toISOString() };
