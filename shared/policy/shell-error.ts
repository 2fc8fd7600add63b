/** A command line the shell reader cannot read (unterminated quote, substitution, …): never thrown out of parseShell. */
export class ShellSyntaxError extends Error {}
