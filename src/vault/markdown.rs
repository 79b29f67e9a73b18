//! A line scanner for the Markdown constructs the vault needs: headings, links,
//! inline tags and block ids, skipping fenced code and inline code.
