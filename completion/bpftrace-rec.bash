# bash completion for bpftrace-rec. The options are read from
# `bpftrace-rec --help`, so that they never drift from the binary's.
_bpftrace_rec() {
	local cur prev i
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	# bpftrace-rec report [DIR]: its own options, from its own --help.
	if [ "$COMP_CWORD" -ge 2 ] && [ "${COMP_WORDS[1]}" = report ]; then
		case $prev in
		--pid)
			COMPREPLY=($(compgen -W "$(cd /proc && printf '%s\n' [0-9]*)" -- "$cur"))
			return ;;
		--sample-type)
			COMPREPLY=($(compgen -W "cpu offcpu wall samples offcpu_waits" -- "$cur"))
			return ;;
		-n | --rows)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" report --help 2> /dev/null |
				grep -oE -- '(^|[ ,])--?[a-zA-Z][a-z-]*' | tr -d ' ,' | sort -u)" -- "$cur"))
		else
			COMPREPLY=($(compgen -d -- "$cur"))
		fi
		return
	fi
	# After "--": the command and its arguments.
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [ "${COMP_WORDS[i]}" = -- ]; then
			if declare -F _command_offset > /dev/null; then
				_command_offset $((i + 1))
			else
				COMPREPLY=($(compgen -c -- "$cur"))
			fi
			return
		fi
	done
	case $prev in
	-p | --pid)
		COMPREPLY=($(compgen -W "$(cd /proc && printf '%s\n' [0-9]*)" -- "$cur"))
		return ;;
	-o | --output)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	--jitdump)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--call-graph)
		COMPREPLY=($(compgen -W "cfi fp dwarf" -- "$cur"))
		return ;;
	--event)
		COMPREPLY=($(compgen -W "cycles cpu-clock" -- "$cur"))
		return ;;
	--xray-version)
		COMPREPLY=($(compgen -W "1 5" -- "$cur"))
		return ;;
	-d | --duration | -F | --freq | -t | --trace | --trace-args | --off-cpu-min | \
		--unwind-mib | --ringbuf-size | --fdr-buffer-size | --flight-recorder)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" --help 2> /dev/null |
			grep -oE -- '(^|[ ,])--?[a-zA-Z][a-z-]*' | tr -d ' ,' | sort -u) --" -- "$cur"))
	elif [ "$COMP_CWORD" = 1 ]; then
		COMPREPLY=($(compgen -W report -- "$cur"))
	fi
}
complete -F _bpftrace_rec bpftrace-rec
