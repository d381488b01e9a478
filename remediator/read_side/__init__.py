"""The remediator's answers to people: /status, /plan and /why/NODE as typed documents (what the server writes and
`kubectl nodemedic` reads back, validating as it reads) and the plan's text for a terminal."""
