"""The operations memctl offers, typed, for both front ends: the CLI (`memctl.cli`) and the MCP
server (`memctl.mcp_server`) call these and nothing below them, so an operation validates its
input, resolves ids and words its errors once (tests/test_layers.py holds the rule;
tests/test_services.py shows both front ends refusing the same input alike)."""
