package proc

// shells are the programs an agent runs its hook commands through.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ash": true, "busybox": true}

// AgentOf is the agent a hook command (pid's parent process chain) works
// for: pid itself, or past up to four shells the agent ran it through
// (Gemini CLI runs hooks with a shell). Where processes cannot be read,
// pid.
func AgentOf(pid int) int {
	for range 4 {
		st, _ := ReadStat(pid)
		if !shells[st.Comm] {
			break
		}
		pp, _ := Parent(pid)
		if pp <= 1 {
			break
		}
		pid = pp
	}
	return pid
}
