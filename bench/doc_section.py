"""docs/benchmarks.md's sections, written by the benchmarks that measure them."""
import re


def put_doc_section(doc, heading, lines):
    """Writes lines (the first is "## HEADING") into the markdown file doc:
    in place of the section of that heading where it stands, else at the end."""
    text = doc.read_text() if doc.exists() else ""
    new, n = re.subn(r"\n## " + re.escape(heading) + r"\n.*?(?=\n## |\Z)",
                     lambda m: "\n" + "\n".join(lines), text, flags=re.S)
    doc.write_text(new if n else text.rstrip("\n") + "\n\n" + "\n".join(lines))
