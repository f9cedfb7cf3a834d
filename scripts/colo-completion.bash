# bash completion for colo: its subcommands and options, read from colo's
# own --help, so it never falls behind the binary. Installed by cmake
# --install as <prefix>/share/bash-completion/completions/colo; or source it.

# The names listed under "Subcommands:" in a help text.
_colo_subcommands() {
  awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1; next } on { on = 0 }' <<<"$1"
}

# The option names (-x, --long) in the left column of a help text.
_colo_options() {
  awk '/^(Options|Positionals):/ { on = 1; next } /^[A-Z]/ { on = 0 }
       on && /^  +-/ { split($1, names, ","); for (i in names) { sub(/[=:].*/, "", names[i]); print names[i] } }' <<<"$1"
}

# The values an option lists in a help text ("-m,--mechanism TEXT:{exclusive,naive}"), one a line.
_colo_option_values() {  # HELP OPTION
  awk -v opt="$2" '/^  +-/ {
      n = split($1, names, ",")
      for (i = 1; i <= n; i++) if (names[i] == opt && match($0, /:\{[^}]*\}/)) {
        m = split(substr($0, RSTART + 2, RLENGTH - 3), values, ",")
        for (j = 1; j <= m; j++) print values[j]
        exit
      }
    }' <<<"$1"
}

_colo() {
  local cur=${COMP_WORDS[COMP_CWORD]} colo=${COMP_WORDS[0]}
  local -a path=()
  local help word i
  help=$("$colo" --help 2>/dev/null) || return
  # Follow the words typed so far down the subcommands colo knows.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    [[ $word == -* ]] && continue
    if _colo_subcommands "$help" | grep -qx -- "$word"; then
      path+=("$word")
      help=$("$colo" "${path[@]}" --help 2>/dev/null) || return
    fi
  done
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_colo_options "$help")" -- "$cur")
    return
  fi
  # An option's value: what its help lists (--mechanism, --backend, --policy, ...).
  local prev=${COMP_WORDS[COMP_CWORD - 1]} values
  if [[ $prev == -* ]]; then
    values=$(_colo_option_values "$help" "$prev")
    if [[ -n $values ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
      return
    fi
  fi
  local subs
  subs=$(_colo_subcommands "$help")
  if [[ -n $subs ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    return
  fi
  case ${path[-1]-} in
    run | submit | simulate | plan | profiles)  # a job file: .toml files and folders
      mapfile -t COMPREPLY < <(compgen -f -X '!*.toml' -- "$cur"; compgen -d -- "$cur") ;;
    show | report | rm)  # a run: the store's recent run ids, and "last"
      mapfile -t COMPREPLY < <(compgen -W "last $("$colo" runs --json -n 30 2>/dev/null |
        sed -n 's/^      "id": \([0-9]*\),$/\1/p')" -- "$cur") ;;
    *) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
  esac
}

complete -o filenames -o bashdefault -F _colo colo
