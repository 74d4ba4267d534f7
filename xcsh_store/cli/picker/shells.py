"""The key bindings ``xcsh-store pick --shell-binding SHELL`` prints: Alt-R opens the picker
on prompts, with what is on the command line as the query, and puts the chosen prompt on the
command line in place of it (cancelled, the line stays as it was), as one line without control
characters (``pick --one-line``: a newline would end a command there, and an escape sequence
would reach the terminal as the shell draws the line).

Alt-R is free in zsh's and fish's default bindings and is bash's revert-line, which few use;
Ctrl-R stays the shell's own history search."""

from __future__ import annotations

SHELLS = ("bash", "zsh", "fish")

# The picker runs in command substitution: it draws on /dev/tty and prints only the choice.
# bash counts READLINE_POINT in bytes: the cursor goes after the last byte of the prompt.
_BASH = r"""# xcsh-store pick: Alt-R puts a prompt of your coding agents on the command line.
# In ~/.bashrc:  eval "$(xcsh-store pick --shell-binding bash)"
__xcsh_store_pick_prompt() {
  local picked
  picked=$(xcsh-store pick --prompts --one-line -- "$READLINE_LINE") || return 0
  READLINE_LINE=$picked
  READLINE_POINT=$(LC_ALL=C; echo "${#picked}")
}
if [[ $- == *i* ]]; then
  bind -x '"\er": __xcsh_store_pick_prompt'
fi
"""

_ZSH = r"""# xcsh-store pick: Alt-R puts a prompt of your coding agents on the command line.
# In ~/.zshrc:  eval "$(xcsh-store pick --shell-binding zsh)"
__xcsh_store_pick_prompt() {
  local picked
  if picked=$(xcsh-store pick --prompts --one-line -- "$BUFFER"); then
    BUFFER=$picked
    CURSOR=${#BUFFER}
  fi
  zle reset-prompt
}
zle -N __xcsh_store_pick_prompt
bindkey '^[r' __xcsh_store_pick_prompt
"""

_FISH = r"""# xcsh-store pick: Alt-R puts a prompt of your coding agents on the command line.
# In ~/.config/fish/config.fish:  xcsh-store pick --shell-binding fish | source
function __xcsh_store_pick_prompt
    set -l picked (xcsh-store pick --prompts --one-line -- (commandline))
    and commandline -r -- $picked
    commandline -f repaint
end
bind \er __xcsh_store_pick_prompt
"""

BINDINGS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}
