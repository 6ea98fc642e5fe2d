import FlagctlCommands
import Foundation

exit(await Flagctl.execute(Array(CommandLine.arguments.dropFirst())))
