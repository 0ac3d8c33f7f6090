// Package bridge mirrors Claude Code's auto memory and a memmesh
// namespace, in both directions, so that what Claude Code remembered of a
// project on one machine is in its memory on the others.
//
// # Claude Code's auto memory
//
// As Claude Code's documentation describes it
// (https://code.claude.com/docs/en/memory, "Auto memory"; also
// https://docs.anthropic.com/en/docs/claude-code/memory):
//
//   - Each project has a directory ~/.claude/projects/<project>/memory/.
//     <project> is derived from the git repository's root, so every
//     worktree and subdirectory of a repository shares one; its name is
//     the path with each character that is not a letter or digit written
//     as "-" (/home/me/app is -home-me-app), which cannot be decoded
//     reliably: the project's path is read from the "cwd" of its
//     transcripts (the .jsonl files beside memory/), as package transcript
//     does.
//   - MEMORY.md is the index. Its first 200 lines, or its first 25 KB,
//     whichever comes first, are loaded at the start of every session;
//     Claude keeps it short and moves details into topic files
//     (debugging.md, api-conventions.md, ...) beside it, which MEMORY.md
//     links to and which are read on demand. All are plain Markdown that
//     people may edit.
//   - Auto memory is on by default; autoMemoryEnabled false in
//     ~/.claude/settings.json, or CLAUDE_CODE_DISABLE_AUTO_MEMORY=1, turns
//     it off, and autoMemoryDirectory moves it. The bridge skips a project
//     in either case and says why.
//
// # Mapping
//
// Projects sit at different paths on different machines, so the bridge
// maps a project by its git remote: its working directory's glob mapping
// ('memmesh map GLOB NS') first, then the mapping of its remote ('memmesh
// map --remote URL NS'), then a namespace made from the remote that is
// the same on every machine (github.com/acme/app is acme-app). A project
// with neither a mapping nor a remote is skipped with the reason.
//
// # Entries and memories
//
// A file is split into entries: a list item with its continuation lines
// (nested items included), or a paragraph; headings only group them. Each
// entry is a memory of the namespace at tier agent, tagged Tag, without a
// time to live, whose provenance is Agent and, as session, the project's
// remote and the file's name ("github.com/acme/app#debugging.md"). The
// state (StateDir, per file: the hash of the file as the bridge left it,
// and per entry its memory, its text and the memory's view then) tells an
// edit made here from a change made in the namespace: a file whose hash
// changed is read for edits, matched to the memories by the entries' text
// and then their order, and a new entry becomes a memory, an edited one a
// new revision of its memory, a deleted one archives it. Secrets are
// scrubbed before anything is sent.
//
// The namespace's memories that no file of the directory holds (those of
// the other machines, and those tagged Tag by anyone) are written into a
// managed part of the file they came from, between the lines
//
//	<!-- memmesh:begin: ... -->
//	- an entry <!-- mm:m-<id> -->
//	<!-- memmesh:end -->
//
// (MEMORY.md for those from no file): the rest of the file is the user's
// and stays as it is, but for the entries whose memory the namespace
// changed or removed. MEMORY.md keeps to Claude Code's limits: its
// managed part takes the most important memories (trust, confidence,
// newest) that fit within 200 lines and 25 KB with the user's part, the
// others go into the topic file memmesh.md, which it links, as it links
// the topic files the bridge made. Deleting an entry of the managed part
// archives its memory; a managed part removed whole (a rewrite of the
// file that dropped it) is written again and forgets nothing. An entry
// whose text a memory of the namespace already holds makes that memory
// auto memory's (it gets Tag).
//
// # Never losing a file
//
// Files are written through a temporary file renamed over them, after a
// copy of what they held is kept under StateDir/backups (the newest
// MaxBackups of each). An entry edited here is never overwritten: its
// edit goes into its memory first. When it was changed on another machine
// too, the two revisions are a sync conflict (memmesh doctor lists it);
// the file then shows the current text with each other version on a line
// starting with "⟂", and editing the entry resolves it. A file that is a
// symlink, not a regular file, larger than MaxFileBytes or not UTF-8 is
// neither read nor written, and said so; a read-only file (or one in a
// read-only directory) is read and not written. What the bridge writes is
// bounded too: a memory over MaxEntryBytes stays out of the files, and a
// topic file it writes stays within MaxTopicBytes. A memory directory that is a symlink is followed (people
// keep it in synced folders) but nothing is written through a symlinked
// file. Memory text written into a file is made inert (internal/inert)
// and cannot open or close a managed part.
package bridge
