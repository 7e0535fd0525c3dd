import ArgumentParser
import FlowHost
import ZeroMQ

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Makes a CURVE key pair.",
        discussion: """
        Without --out, prints the public and secret keys (z85). With --out NAME, writes NAME.key \
        (secret, mode 600) and NAME.pub (public). A host listening beyond loopback takes its own \
        secret with --curve-secret NAME.key and the clients' public keys with --allow FILE.
        """
    )

    @Option(name: .long, help: "Write NAME.key and NAME.pub instead of printing.")
    var out: String?

    func run() throws {
        let pair = try CurveKeyPair.generate()
        if let out {
            try KeyFiles.write(pair, basePath: out)
            print("wrote \(out).key (secret) and \(out).pub (public: \(pair.publicKey.z85))")
        } else {
            print("public: \(pair.publicKey.z85)")
            print("secret: \(pair.secretKey.z85)")
        }
    }
}
