// The help texts of the inbox commands of the `lineup` CLI: e2e, pair, join, devices, machines.
import { INBOX_LIMITS } from "../../shared/contract/inbox.js";

export const CODE_MINUTES = INBOX_LIMITS.codeTtlMs / 60_000;

const OPTIONS_HELP = `Options:
  --relay URL      relay base URL (LINEUP_RELAY_URL; default http://127.0.0.1:8787)
  --state-dir DIR  state directory (LINEUP_STATE_DIR; default ~/.lineup)
  -h, --help       this help`;

export const INBOX_HELP: Record<string, string> = {
  e2e: `Usage: lineup e2e on|off|status [--json] [--relay URL] [--key K] [--state-dir DIR]

End-to-end encryption for this machine's inbox (docs/e2e.md): the relay routes what it cannot read.
on       makes this machine's key and, the first time, the inbox's content key (the relay never has it);
         sessions created from now on are sealed (a plaintext session of a directory is replaced by a
         sealed one the next time it starts). Creates the inbox first (with the relay key) if needed.
         Devices paired before must pair again (\`lineup pair\`) to receive the key.
off      new sessions are plaintext again; sealed sessions stay sealed and the keys stay.
status   on/off, the key epoch, the holders (devices and machines with the key), pending pairings and
         whether a re-key is due; --json prints one JSON object.

Options:
  --json           machine-readable output (one JSON document on stdout)
  --key K          relay key, only needed to create the inbox (LINEUP_RELAY_KEY)
${OPTIONS_HELP.slice("Options:\n".length)}`,
  pair: `Usage: lineup pair [--json] [--no-qr] [--wait | --no-wait] [--relay URL] [--key K] [--state-dir DIR]

Pairs a phone or browser with this machine's inbox: prints a pairing link and its QR code (stderr). Open it
once on the device; from then on it sees every session of the inbox — every project directory, \`lineup
connect\`, \`lineup call\`, \`lineup mcp\` — including sessions created later, and can be revoked on its own
(\`lineup devices revoke ID\`). The code in the link is single-use and valid ${CODE_MINUTES} minutes.
Creates the inbox first (with the relay key) if this machine has none on the relay.

Options:
  --json           print exactly one JSON line {"url","expires_at"} on stdout, nothing else there
  --no-qr          do not print the QR code
  --wait           E2E on: stay until the device opened the link, hand it the key and print the comparison
                   code (the default in a terminal; exit 1 if the code expires unused, 130 on Ctrl-C)
  --no-wait        E2E on: print the link and exit; the next \`lineup\` command hands the key over
  --key K          relay key, only needed to create the inbox (LINEUP_RELAY_KEY)
${OPTIONS_HELP.slice("Options:\n".length)}`,
  join: `Usage: lineup join CODE [--name NAME] [--relay URL] [--state-dir DIR]

Makes this machine a machine of an existing inbox, with a join code the app shows (devices screen, "add a
machine"; single-use, valid ${CODE_MINUTES} minutes). No relay key needed. The machine credential is saved in the
state file and replaces any other inbox this machine had on the relay: sessions of that inbox are replaced
by new ones in this inbox the next time they start.

Options:
  --name NAME      this machine's name in the inbox (default: the host name)
${OPTIONS_HELP.slice("Options:\n".length)}`,
  devices: `Usage: lineup devices [list] [--json]
       lineup devices rename ID NAME
       lineup devices revoke ID

list     the human devices paired with this machine's inbox (id, name, paired, last seen);
         --json prints one JSON array of {id, name, paired_at, last_seen} (epoch ms)
rename   names a device (1-${INBOX_LIMITS.maxName} characters)
revoke   removes a device: its credential is refused from now on and its open connections close at
         once; other devices are not affected. Exit 1 if there is no such device.

${OPTIONS_HELP}`,
  machines: `Usage: lineup machines [list] [--json]
       lineup machines revoke ID

list     the agent machines of this machine's inbox (this one is marked);
         --json prints one JSON array of {id, name, joined_at, last_seen, this_machine}
revoke   removes a machine: its credential is refused and every session it created ends (sockets close
         with 4004). Revoking this machine forgets its credential here too. Exit 1 if no such machine.

${OPTIONS_HELP}`,
};
