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
  local subs
  subs=$(_colo_subcommands "$help")
  if [[ -n $subs ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}

complete -o filenames -o bashdefault -F _colo colo
