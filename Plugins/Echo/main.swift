// flowbus-echo: the example plugin. It serves the MDP service `flowbus.echo` and publishes
// its own status under the Clone key /demo/echo/<replica>, so `flowbus tap` has something to show.
import Foundation

exit(EchoPlugin.run())
