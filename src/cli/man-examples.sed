# help2man makes the examples that close `colo --help` one indented
# paragraph, which man fills into a single line: keep them one per line.
/^Examples:$/{
i\
.PP
n
s/^\.IP$/.nf/
}
$a\
.fi
