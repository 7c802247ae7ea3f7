"""The HTTP API and dashboard: runs and orchestration jobs over HTTP and WebSocket, live, in a browser."""
