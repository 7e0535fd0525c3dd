import CZeroMQ

/// The socket types Flowbus uses. DRAFT types (CLIENT, SERVER, RADIO, DISH) are absent:
/// Debian's libzmq is built without them.
public enum SocketType: Sendable, CaseIterable, CustomStringConvertible {
    case router, dealer, pub, sub, xpub, xsub, push, pull, pair, req, rep

    var rawValue: Int32 {
        switch self {
        case .router: ZMQ_ROUTER
        case .dealer: ZMQ_DEALER
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .xpub: ZMQ_XPUB
        case .xsub: ZMQ_XSUB
        case .push: ZMQ_PUSH
        case .pull: ZMQ_PULL
        case .pair: ZMQ_PAIR
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        }
    }

    public var description: String {
        switch self {
        case .router: "ROUTER"
        case .dealer: "DEALER"
        case .pub: "PUB"
        case .sub: "SUB"
        case .xpub: "XPUB"
        case .xsub: "XSUB"
        case .push: "PUSH"
        case .pull: "PULL"
        case .pair: "PAIR"
        case .req: "REQ"
        case .rep: "REP"
        }
    }
}
