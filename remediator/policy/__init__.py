"""What the user asked for: the policy file read into typed values, every mistake as FILE:LINE: field: message.
`loader.py` dispatches each section to the module that defines it; each strategy reads its own `args`."""
