//! The service as a session's port ([`SessionPort`]): what a session's cell may ask of it.

use imurun_core::BoxFuture;
use imurun_keep_rules::random::Random;
use imurun_store::Store;

use super::KeepService;
use crate::KeepError;
use crate::cells::{Bound, IntakeContext, SessionHost, SessionPort, ToolAnswer};
use crate::events::KeepEvent;
use crate::journal_detail::JournalDetail;
use crate::proposals::Proposal;
use crate::service::AnyProposal;
use crate::vault::Secret;

impl SessionPort for KeepService {
    fn host_id(&self) -> &str {
        KeepService::host_id(self)
    }

    fn random(&self) -> &dyn Random {
        self.core.random()
    }

    fn store(&self) -> &Store {
        self.core.store()
    }

    fn refusal_bound(&self, user: &str) -> Bound {
        self.core.cell_refusal_bound(user)
    }

    fn journal_as<'a>(
        &'a self,
        actor: &'a str,
        user: &'a str,
        subject: &'a str,
        detail: JournalDetail,
    ) -> BoxFuture<'a, Result<(), KeepError>> {
        Box::pin(self.core.journal_as(actor, Some(user), subject, detail))
    }

    fn taint<'a>(
        &'a self,
        user: &'a str,
        session: &'a str,
        source: &'a str,
    ) -> BoxFuture<'a, Result<(bool, String), KeepError>> {
        Box::pin(async move { self.sessions().taint(user, session, source).await })
    }

    fn propose<'a>(
        &'a self,
        host: &'a SessionHost,
        proposal: &'a Proposal,
        taint: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), KeepError>> {
        Box::pin(async move {
            let view = self.proposals().store(host, proposal, taint).await?;
            host.publish(KeepEvent::ProposalCreated {
                session_id: host.session_id.clone(),
                proposal: AnyProposal::Other(Box::new(view)),
            });
            Ok(())
        })
    }

    fn propose_tool<'a>(
        &'a self,
        host: &'a SessionHost,
        payload_json: &'a str,
        taint: Option<&'a str>,
        context: &'a IntakeContext,
    ) -> BoxFuture<'a, Result<(), KeepError>> {
        Box::pin(async move {
            let review = self
                .tool_proposals()
                .store(host, payload_json, taint, context)
                .await?;
            host.publish(KeepEvent::ProposalCreated {
                session_id: host.session_id.clone(),
                proposal: AnyProposal::Tool(Box::new(review)),
            });
            Ok(())
        })
    }

    fn memory<'a>(
        &'a self,
        user: &'a str,
        agent: &'a str,
    ) -> BoxFuture<'a, Result<(Vec<String>, bool), KeepError>> {
        Box::pin(async move { self.proposals().memory_texts(user, agent).await })
    }

    fn credential<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Secret, KeepError>> {
        Box::pin(async move { self.vault().open(owner, name).await })
    }

    fn call_tool<'a>(
        &'a self,
        parent: &'a SessionHost,
        name: &'a str,
        args_json: &'a str,
    ) -> BoxFuture<'a, Result<ToolAnswer, String>> {
        Box::pin(async move { self.tools().call(parent, name, args_json).await })
    }
}
