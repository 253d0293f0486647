"""Reports: what a reader sees. The support matrix's Markdown and HTML, the recommendation of a style, the browser
that checks the page, the terminal summary, the latency tables, and the coverage of a namespace's ops.

May import: compat.matrix, compat.evidence and the shared modules. Never the run or the child: a report is made from
results files alone."""
