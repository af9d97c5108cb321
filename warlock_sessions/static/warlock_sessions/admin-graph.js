// Draws the session's agent (a Mermaid flowchart in #agent-graph) with the script served
// from this app's static files: nothing is fetched from the internet.
mermaid.initialize({ startOnLoad: true, securityLevel: "strict", flowchart: { useMaxWidth: false } });
