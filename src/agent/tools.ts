/**
 * The SWE-agent tools of the paper's scaffold (arXiv 2508.03501) as real commands
 * inside the sandbox: one bash script per tool in `.swerl/bin`, state (the open file and its
 * window) in `.swerl/state.json`. `submit` is handled by the episode loop.
 *
 * The scripts need bash and the POSIX basics only (cat, head, tail, mkdir, awk — mawk is enough
 * —, grep, sed, rm), no node or python: SWE-bench images have neither. Their output is byte for
 * byte that of the Node scripts they replace (kept as the test oracle in
 * test/helpers/node-tools-reference.ts), since recorded trajectories contain it: every path and
 * number is formatted as Node's path.resolve / path.relative / JSON.stringify / Number would,
 * and all text work is byte-wise (LC_ALL=C), which equals Node's UTF-16 work on valid UTF-8.
 * Known differences (documented, not reproduced): files that are not valid UTF-8 (Node would
 * read and write U+FFFD), an empty `replace` search in a file holding NUL bytes (an error here),
 * and Node's stack traces (where a Node script threw, e.g. `edit --file DIR`, these print one
 * `Error: …` line and exit 1 as Node does).
 *
 * In the script templates below `@{` stands for bash's `$` + `{` (a template literal would read
 * it as a substitution); {@link toolFiles} turns it back.
 */

/** Lines shown by open / goto / scroll. */
export const WINDOW = 100;

/** A String.raw tag that turns `@{` into `${`, so the bash below can be read as bash. */
function bash(s: TemplateStringsArray, ...v: unknown[]): string {
  return String.raw(s, ...v).replaceAll('@{', '${');
}

/** Helpers shared by every tool (each script is self-contained: this is prepended to each). */
const COMMON = bash`
export LC_ALL=C
shopt -s extglob
shopt -u patsub_replacement 2>/dev/null
W=${WINDOW}
STATE=$SWERL_WS/.swerl/state.json
# process.cwd(): the physical directory (cd -P resolves symlinks without a subshell)
cd -P . 2>/dev/null
CWD=$PWD
# JS StrWhiteSpace, for Number(): ASCII blanks, NBSP, the Zs spaces, LS, PS and the BOM
JSWS=$'+([ \t\n\v\f\r]|\xc2\xa0|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80|\xef\xbb\xbf)'
HUGE=1000000000000000

fail() { printf '%s\n' "$1"; exit 1; }
# where a Node script threw: Node printed a stack trace and exited 1
crash() { printf 'Error: %s\n' "$1" >&2; exit 1; }

# Node's error for a failed file operation, from the message bash or mkdir gave: $1 message, $2 the
# syscall, $3 the path
oserr() {
  local c d
  case $1 in
    *'Permission denied'*) c=EACCES d='permission denied' ;;
    *'Read-only file system'*) c=EROFS d='read-only file system' ;;
    *'No such file or directory'*) c=ENOENT d='no such file or directory' ;;
    *'Not a directory'*) c=ENOTDIR d='not a directory' ;;
    *'Is a directory'*) c=EISDIR d='illegal operation on a directory' ;;
    *'File exists'*) c=EEXIST d='file already exists' ;;
    *'No space left'*) c=ENOSPC d='no space left on device' ;;
    *'Too many levels of symbolic links'*) c=ELOOP d='too many symbolic links encountered' ;;
    *'Operation not permitted'*) c=EPERM d='operation not permitted' ;;
    *'File name too long'*) c=ENAMETOOLONG d='name too long' ;;
    *) c=EIO d='i/o error' ;;
  esac
  crash "$c: $d, $2 '$3'"
}

# path.resolve(p) against CWD, lexically: REPLY
resolve() {
  local p=$1 c out=() IFS=/
  [[ $p == /* ]] || p=$CWD/$p
  while :; do
    c=@{p%%/*}
    case $c in
      '' | .) ;;
      ..) ((@{#out[@]})) && unset 'out[-1]' ;;
      *) out+=("$c") ;;
    esac
    [[ $p == */* ]] || break
    p=@{p#*/}
  done
  REPLY="/@{out[*]}"
}

# the components of a normalized absolute path into PARTS
parts() {
  local p=@{1#/}
  PARTS=()
  [[ -z $p ]] && return
  while [[ $p == */* ]]; do PARTS+=("@{p%%/*}"); p=@{p#*/}; done
  PARTS+=("$p")
}

# path.relative(from, to) of two absolute paths: REPLY
rel() {
  local from to i k=0 out=() IFS=/
  resolve "$1"; from=$REPLY
  resolve "$2"; to=$REPLY
  if [[ $from == "$to" ]]; then REPLY=; return; fi
  parts "$from"; local fa=("@{PARTS[@]}")
  parts "$to"; local ta=("@{PARTS[@]}")
  while ((k < @{#fa[@]} && k < @{#ta[@]})) && [[ @{fa[k]} == "@{ta[k]}" ]]; do ((k++)); done
  for ((i = k; i < @{#fa[@]}; i++)); do out+=(..); done
  out+=("@{ta[@]:k}")
  REPLY="@{out[*]}"
}

# JSON.stringify of a string: REPLY
json() {
  local s=$1 c h ch
  s=@{s//\\/\\\\}
  s=@{s//\"/\\\"}
  if [[ $s == *[$'\001'-$'\037']* ]]; then
    s=@{s//$'\b'/\\b}
    s=@{s//$'\t'/\\t}
    s=@{s//$'\n'/\\n}
    s=@{s//$'\f'/\\f}
    s=@{s//$'\r'/\\r}
    for ((c = 1; c < 32; c++)); do
      printf -v h '%02x' "$c"
      printf -v ch "\\x$h"
      [[ $s == *"$ch"* ]] && s=@{s//"$ch"/\\u00$h}
    done
  fi
  REPLY="\"$s\""
}

# the state, as Node's load(): FILE (empty: none) and FIRST
load() {
  local j= re='^\{"file":"(.*)","first":([0-9]+)\}$'
  FILE=
  FIRST=1
  { IFS= read -r -d '' j <"$STATE"; } 2>/dev/null
  if [[ $j =~ $re ]]; then
    FIRST=$((10#@{BASH_REMATCH[2]}))
    j=@{BASH_REMATCH[1]}
    j=@{j//\\\"/\"}
    printf -v FILE '%b' "$j"
  fi
}

save() {
  json "$1"
  err=$({ printf '%s' "{\"file\":$REPLY,\"first\":$2}" >"$STATE"; } 2>&1) || oserr "$err" open "$STATE"
}

needfile() { [[ -n $FILE && -e $FILE ]] || fail 'No file open. Use the open command first.'; }

# Node's readFileSync throws on a directory or an unreadable file
readable() {
  [[ -d $1 ]] && crash 'EISDIR: illegal operation on a directory, read'
  [[ -r $1 ]] || crash "EACCES: permission denied, open '$1'"
}

# the line count of a file (Node's lines(file).length): N
nlines() {
  readable "$1"
  N=$(awk 'END { print NR }' "$1")
}

# Number(s) for a line number: REPLY = the integer (HUGE past 10^12), or 'bad' unless an integer >= 1
jsint() {
  local s=$1 d
  s=@{s##$JSWS}
  s=@{s%%$JSWS}
  REPLY=bad
  if [[ $s =~ ^0[xX]([0-9a-fA-F]+)$ ]]; then
    d=@{BASH_REMATCH[1]##+(0)}
    ((@{#d} > 10)) && { REPLY=$HUGE; return; }
    [[ -n $d ]] && (($((16#$d)) >= 1)) && REPLY=$((16#$d))
  elif [[ $s =~ ^0[oO]([0-7]+)$ ]]; then
    d=@{BASH_REMATCH[1]##+(0)}
    ((@{#d} > 13)) && { REPLY=$HUGE; return; }
    [[ -n $d ]] && REPLY=$((8#$d))
  elif [[ $s =~ ^0[bB]([01]+)$ ]]; then
    d=@{BASH_REMATCH[1]##+(0)}
    ((@{#d} > 40)) && { REPLY=$HUGE; return; }
    [[ -n $d ]] && REPLY=$((2#$d))
  elif [[ $s =~ ^\+?([0-9]+)$ ]]; then
    d=@{BASH_REMATCH[1]##+(0)}
    ((@{#d} > 12)) && { REPLY=$HUGE; return; }
    [[ -n $d ]] && REPLY=$((10#$d))
  elif [[ $s =~ ^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$ ]]; then
    # a fraction or an exponent: strtod rounds as JS does
    REPLY=$(S=$s awk -v huge="$HUGE" 'BEGIN {
      x = ENVIRON["S"] + 0
      if (x < 1 || x != int(x) || (x == x * 2)) print "bad"; else if (x > 1e12) print huge; else printf "%d\n", x
    }')
  fi
}

# String(Number(d)) of a digit string: REPLY; BIG=1 when past 15 digits (no line number is)
jsdigits() {
  local d=@{1##+(0)}
  BIG=0
  REPLY=@{d:-0}
  ((@{#d} <= 15)) && return
  BIG=1
  REPLY=$(D=$d awk 'BEGIN {
    x = ENVIRON["D"] + 0
    if (x == x * 2) { print "Infinity"; exit }
    for (p = 1; p <= 17; p++) { m = sprintf("%." (p - 1) "e", x); if (m + 0 == x) break }
    split(m, a, "e"); mant = a[1]; e = a[2] + 0; gsub(/\./, "", mant)
    if (e < 21) { while (length(mant) < e + 1) mant = mant "0"; print mant }
    else { o = substr(mant, 1, 1); if (length(mant) > 1) o = o "." substr(mant, 2); print o "e+" e }
  }')
}

# Node's show(): clamps and saves the window, prints it, exits 0
show() {
  local f=$1 first=$2 last top
  nlines "$f"
  top=$((N - W + 1))
  ((top < 1)) && top=1
  ((first > top)) && first=$top
  ((first < 1)) && first=1
  save "$f" "$first"
  last=$((first + W - 1))
  ((last > N)) && last=$N
  rel "$SWERL_WS" "$f"
  printf '[File: %s (%s lines total)]\n' "$REPLY" "$N"
  ((first > 1)) && printf '(%s more lines above)\n' $((first - 1))
  ((last >= first)) && awk -v a="$first" -v b="$last" 'NR >= a { print NR ":" $0 } NR >= b { exit }' "$f"
  ((last < N)) && printf '(%s more lines below)\n' $((N - last))
  exit 0
}

# replace in a file with NUL bytes: the whole file in awk; prints "count at", writes F when it changes
REPLACE_AWK='
  BEGIN { ORS = ""; S = ENVIRON["S"]; R = ENVIRON["R"]; all = ENVIRON["ALL"] + 0; L = length(S) }
  { t = (NR > 1 ? t "\n" : "") $0 }
  END {
    if (ENVIRON["NL"] + 0) t = t "\n"
    rest = t; off = 0; count = 0; out = ""
    while ((p = index(rest, S)) > 0) {
      if (++count == 1) at = off + p
      out = out substr(rest, 1, p - 1) R
      off += p - 1 + L
      rest = substr(rest, p + L)
    }
    out = out rest
    pre = substr(t, 1, at - 1)
    lines = 1 + gsub(/\n/, "", pre)
    print count " " lines "\n"
    if (count == 0 || (count > 1 && !all)) exit
    if (!all) {
      pre = substr(t, 1, at - 1); post = substr(t, at + L); x = ""
      for (i = 1; i <= length(R); i++) {
        c = substr(R, i, 1); d = substr(R, i + 1, 1)
        if (c != "$" || i == length(R)) { x = x c; continue }
        if (d == "$") x = x "$"; else if (d == "&") x = x S; else if (d == "\140") x = x pre; else if (d == "\047") x = x post; else { x = x c; continue }
        i++
      }
      out = pre x post
    }
    print out > ENVIRON["F"]
  }'
UPDATED='File updated. Please review the changes and make sure they are correct (correct indentation, no duplicate lines, etc). Edit the file again if necessary.'
`;

/** Script bodies by tool name (each runs after {@link COMMON}). */
export const TOOL_SCRIPTS: Record<string, string> = {
  open: bash`
USAGE='Usage: open <file> [<line_number>]'
[[ -n @{1-} ]] || fail "$USAGE"
resolve "$1"
abs=$REPLY
[[ -e $abs && ! -d $abs ]] || fail "Error: File $1 not found"
n=1
if (($# >= 2)); then
  jsint "$2"
  [[ $REPLY == bad ]] && fail "$USAGE"
  n=$REPLY
fi
first=$((n - W / 2))
((first < 1)) && first=1
show "$abs" "$first"
`,
  goto: bash`
load
needfile
REPLY=bad
(($# >= 1)) && jsint "$1"
[[ $REPLY == bad ]] && fail 'Usage: goto <line_number>'
n=$REPLY
nlines "$FILE"
((n > N)) && fail "Error: <line> must be less than or equal to $N"
first=$((n - W / 2))
((first < 1)) && first=1
show "$FILE" "$first"
`,
  scroll_down: bash`
load
needfile
show "$FILE" $((FIRST + W))
`,
  scroll_up: bash`
load
needfile
first=$((FIRST - W))
((first < 1)) && first=1
show "$FILE" "$first"
`,
  create: bash`
[[ -n @{1-} ]] || fail 'Usage: create <filename>'
resolve "$1"
abs=$REPLY
[[ -e $abs ]] && fail "Error: File $1 already exists"
dir=@{abs%/*}
if ! err=$(mkdir -p -- "@{dir:-/}" 2>&1); then
  # Node's recursive mkdir passes EACCES, ENOSPC, ENOTDIR and EPERM on; any other error is
  # EEXIST where something not a folder is in the way, else ENOENT
  case $err in
    *'Permission denied'* | *'No space left'* | *'Not a directory'* | *'Operation not permitted'*) ;;
    *'File exists'*) err='File exists' ;;
    *) err='No such file or directory' ;;
  esac
  oserr "$err" mkdir "@{dir:-/}"
fi
err=$({ : >"$abs"; } 2>&1) || oserr "$err" open "$abs"
show "$abs" 1
`,
  edit: bash`
args=("$@")
load
file=$FILE
for ((i = 0; i < @{#args[@]}; i++)); do
  if [[ @{args[i]} == --file ]]; then
    resolve "@{args[i + 1]-}"
    file=$REPLY
    args=("@{args[@]:0:i}" "@{args[@]:i+2}")
    break
  fi
done
[[ -n $file && -e $file ]] || fail 'No file open. Use the open command first, or edit --file PATH.'
[[ @{args[0]-} =~ ^([0-9]+):([0-9]+)$ ]] || fail "Usage: edit [--file PATH] <start>:<end> << 'EOF'"$'\n''<replacement text>'$'\n''EOF'
jsdigits "@{BASH_REMATCH[1]}"
start=$REPLY big=$BIG
jsdigits "@{BASH_REMATCH[2]}"
end=$REPLY big=$((big | BIG))
nlines "$file"
if ((big || start < 1 || end < start - 1 || end > N)); then
  fail "Error: line range $start:$end is outside 1:$N"
fi
text=$SWERL_WS/.swerl/edit-text.$$
out=$SWERL_WS/.swerl/edit-out.$$
trap 'rm -f -- "$text" "$out"' EXIT
if ((@{#args[@]} > 1)); then printf '%s' "@{args[*]:1}" >"$text"; else cat >"$text"; fi
# the lines before start, the replacement's lines, the lines after end: each ended by a newline
T=$text awk -v a="$start" -v b="$end" '
  function repl(l) { while ((getline l < ENVIRON["T"]) > 0) print l }
  NR == a { repl() }
  NR < a || NR > b { print }
  END { if (a > NR) repl() }' "$file" >"$out"
[[ -s $out ]] || printf '\n' >"$out"
err=$({ cat -- "$out" >"$file"; } 2>&1) || oserr "$err" open "$file"
printf '%s\n' "$UPDATED"
first=$((start - W / 2))
((first < 1)) && first=1
show "$file" "$first"
`,
  replace: bash`
all=0
if [[ @{1-} == --replace-all ]]; then all=1; shift; fi
(($# == 2)) || fail 'Usage: replace [--replace-all] <search> <replace>'
load
needfile
S=$1 R=$2
readable "$FILE"
t=
if { IFS= read -r -d '' t <"$FILE"; } 2>/dev/null; then
  # read stopped at a NUL byte, which no bash string holds: awk does it all
  [[ -z $S ]] && crash 'replace with an empty search string in a file with NUL bytes is not supported'
  nl=$(tail -c 1 -- "$FILE" | wc -l)
  res=$(NL=$nl S=$S R=$R ALL=$all F=$FILE awk "$REPLACE_AWK" "$FILE")
  count=@{res% *} at=@{res#* }
  if ((count == 0)); then
    json "$S"
    fail "Error: $REPLY not found in the open file"
  fi
  ((count > 1 && !all)) && fail "Error: $count matches; use --replace-all or a longer search string"
  printf '%s\n' "$UPDATED"
  first=$((at - W / 2))
  ((first < 1)) && first=1
  show "$FILE" "$first"
fi
if [[ -z $S ]]; then
  # ''.split('') counts UTF-16 units: a non-continuation byte is one, a 4-byte lead one more
  x=@{t//[$'\x80'-$'\xbf']/}
  y=@{t//[!$'\xf0'-$'\xf7']/}
  count=$((@{#x} + @{#y} - 1))
else
  x=@{t//"$S"/}
  count=$(((@{#t} - @{#x}) / @{#S}))
fi
if ((count == 0)); then
  json "$S"
  fail "Error: $REPLY not found in the open file"
fi
((count > 1 && !all)) && fail "Error: $count matches; use --replace-all or a longer search string"
# the text before the first match: bash's own %% and # are quadratic here (seconds for a
# 500 KB file), so mark the match with a byte the text lacks and let a regex cut there
pre=
for m in $'\x02' $'\x03' $'\x04' $'\x05' $'\x06' $'\x07' $'\x0e' $'\x0f' $'\x10' $'\x11' $'\x12' ''; do
  [[ -z $m || $t == *"$m"* ]] && continue
  re="^([^$m]*)$m"
  [[ @{t/"$S"/$m} =~ $re ]] && pre=@{BASH_REMATCH[1]}
  break
done
[[ -z $m ]] && pre=@{t%%"$S"*}
written=0
if ((all)) && [[ -n $S ]]; then
  new=@{t//"$S"/"$R"}
elif ((all)); then
  # ''.split('').join(R): R between UTF-16 units; a split surrogate pair is written as two U+FFFD
  nl=0
  [[ $t == *$'\n' ]] && nl=1
  R=$R awk -v nl="$nl" '
    BEGIN { ORS = ""; for (i = 128; i < 192; i++) C = C sprintf("%c", i); for (i = 240; i < 248; i++) A = A sprintf("%c", i); R = ENVIRON["R"] }
    function unit(u) { if (started) print R; print u; started = 1 }
    {
      if (NR > 1) unit("\n")
      n = length($0)
      for (i = 1; i <= n; i = j) {
        c = substr($0, i, 1)
        for (j = i + 1; j <= n && index(C, substr($0, j, 1)); j++);
        if (index(A, c)) { unit("\357\277\275"); unit("\357\277\275") } else unit(substr($0, i, j - i))
      }
    }
    END { if (nl) unit("\n") }' "$FILE" >"$SWERL_WS/.swerl/replace.$$"
  err=$({ cat -- "$SWERL_WS/.swerl/replace.$$" >"$FILE"; } 2>&1) || { rm -f -- "$SWERL_WS/.swerl/replace.$$"; oserr "$err" open "$FILE"; }
  rm -f -- "$SWERL_WS/.swerl/replace.$$"
  written=1
else
  # String.prototype.replace: $$, $&, $\` and $' in the replacement
  post=@{t:@{#pre}+@{#S}}
  X= r=$R
  while [[ $r == *'$'* ]]; do
    X+=@{r%%'$'*}
    r=@{r#*'$'}
    case @{r:0:1} in
      '$') X+='$' r=@{r:1} ;;
      '&') X+=$S r=@{r:1} ;;
      $'\x60') X+=$pre r=@{r:1} ;;
      "'") X+=$post r=@{r:1} ;;
      *) X+='$' ;;
    esac
  done
  new=$pre$X$r$post
fi
((written)) || err=$({ printf '%s' "$new" >"$FILE"; } 2>&1) || oserr "$err" open "$FILE"
x=@{pre//$'\n'/}
at=$((@{#pre} - @{#x} + 1))
printf '%s\n' "$UPDATED"
first=$((at - W / 2))
((first < 1)) && first=1
show "$FILE" "$first"
`,
  search_file: bash`
term=@{1-} given=@{2-}
[[ -n $term ]] || fail 'Usage: search_file <search_term> [<file>]'
load
file=$FILE
if [[ -n $given ]]; then
  resolve "$given"
  file=$REPLY
fi
if [[ -z $file || ! -e $file ]]; then
  [[ -n $given ]] && fail "Error: File $given not found"
  fail 'No file open. Use the open command first, or give a file.'
fi
readable "$file"
rel "$CWD" "$file"
shown=$REPLY
count=0
# a line never holds a newline, so a term with one matches nothing (grep would split it)
[[ $term == *$'\n'* ]] || count=$(grep -c -a -F -e "$term" -- "$file")
if ((count == 0)); then
  printf 'No matches found for "%s" in %s\n' "$term" "$shown"
  exit 0
fi
printf 'Found %s matches for "%s" in %s:\n' "$count" "$term" "$shown"
grep -n -a -F -e "$term" -- "$file" | sed 's/^/Line /'
`,
};

/** The files to write into a workspace: each tool as an executable bash script. */
export function toolFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, src] of Object.entries(TOOL_SCRIPTS))
    out[`.swerl/bin/${name}`] = `#!/usr/bin/env bash\n${COMMON}${src}`;
  return out;
}
