import FlowKit
import FlowProtocol
import Foundation

/// Every view model of the app by screen kind, built over `services` (one instance per session).
public enum AppViewModels {
    public static func factories(services: AppServices, clock: @escaping AppClock = { Date() }) -> [String: ViewModelRuntime.Factory] {
        [
            SignInViewModel.screen: { SignInViewModel(session: $0, users: services.users) },
            SignUpViewModel.screen: { SignUpViewModel(session: $0, users: services.users, genres: services.genres) },
            EmailVerificationViewModel.screen: { EmailVerificationViewModel(session: $0, users: services.users) },
            ForgotPasswordViewModel.screen: { ForgotPasswordViewModel(session: $0, users: services.users) },
            ResetPasswordViewModel.screen: { ResetPasswordViewModel(session: $0, users: services.users) },
            HomeViewModel.screen: { HomeViewModel(session: $0, users: services.users, movies: services.movies) },
            DetailsViewModel.screen: { DetailsViewModel(session: $0, users: services.users, movies: services.movies) },
            LikesViewModel.screen: { LikesViewModel(session: $0, users: services.users, movies: services.movies) },
            SettingsViewModel.screen: { SettingsViewModel(session: $0, users: services.users, genres: services.genres) },
            ChangePasswordViewModel.screen: { ChangePasswordViewModel(session: $0, users: services.users) },
            ExpensesViewModel.screen: { ExpensesViewModel(session: $0, expenses: services.expenses, clock: clock) },
        ]
    }
}
