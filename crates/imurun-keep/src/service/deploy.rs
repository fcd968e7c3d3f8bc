//! Deploying agents (operator only) and listing them.
//!
//! A deploy is accepted only when every check holds, in this order: the caller is the operator;
//! the bundle is a WebAssembly component within [`BUNDLE_BYTES_MAX`]; an active signer key of
//! the trust root signed its SHA-256; an active policy key signed the policy, which has not
//! expired, names that SHA-256 and holds a valid manifest; the version is above every version
//! deployed for the name (the high-water mark, which outlives deleted rows); and every
//! credential the manifest names is in the operator's vault. A refusal is journaled with its
//! rule.

use imurun_keep_rules::RuleError;
use serde::Serialize;
use serde_json::Value;

use super::{AGENT_KIND, Agents, Identity, append, envelope_text};
use crate::KeepError;
use crate::documents::{POLICY_TYPE, Signature, Signed};
use crate::journal_detail::DeployDetail;
use crate::manifest::Manifest;
use imurun_keep_rules::checks::documents;
pub use imurun_keep_rules::checks::documents::BUNDLE_BYTES_MAX;

/// What a deploy sends.
#[derive(Debug, Clone)]
pub struct DeployRequest {
    /// The component's bytes.
    pub bundle: Vec<u8>,
    /// A trusted signer's signature over the bundle's SHA-256.
    pub bundle_signature: Signature,
    /// The operator's signed policy holding the manifest.
    pub policy: Signed,
}

/// A deployed agent, as the operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentView {
    pub name: String,
    pub version: i64,
    pub owner: String,
    pub bundle_sha256: String,
    pub bundle_size: i64,
    pub signer_key_id: String,
    pub policy_key_id: String,
    pub manifest: Value,
    pub deployed_at_ms: i64,
    /// Why the stored agent is not in force (its policy expired, its row does not hold), for the
    /// operator's list; `None` for an agent in force.
    pub refused: Option<String>,
}

/// A deployed agent, as a user sees it: what it is and what it may reach, not how it is
/// signed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublicAgentView {
    pub name: String,
    pub version: i64,
    pub description: String,
    /// What its manifest grants: a person deciding to talk to it reads this first.
    pub reach: AgentReach,
}

/// What an agent in force may reach, from its verified manifest: credentials by name only.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepAgentReach))]
pub struct AgentReach {
    /// `deny`, `ask` (each use waits for the person) or `allow` (the rules decide).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub egress_mode: crate::manifest::EgressMode,
    /// The requests it may make at all: scheme, host, port, methods, path prefix.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub egress: Vec<crate::manifest::EgressRule>,
    /// The credentials the host may add for it, by name (the operator's vault entries).
    pub credentials: Vec<String>,
    /// `none`, `read` or `write`: the memory entries its person accepted.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub memory: crate::manifest::MemoryAccess,
    /// Whether it may ask the host's model.
    pub model_socket: bool,
    /// Whether it may hand display-only cards.
    pub card: bool,
    /// Its limits per message: memory (MiB), CPU and wall time (ms).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub resources: crate::manifest::Resources,
}

impl AgentReach {
    fn of(manifest: &crate::manifest::Manifest) -> AgentReach {
        AgentReach {
            egress_mode: manifest.egress.mode,
            egress: manifest.egress.rules.clone(),
            credentials: manifest
                .credentials
                .iter()
                .map(|c| c.name.clone())
                .collect(),
            memory: manifest.memory,
            model_socket: manifest.model_socket,
            card: manifest.card,
            resources: manifest.resources,
        }
    }
}

impl Agents<'_> {
    /// Deploys an agent version (see the module's comment for the checks).
    pub async fn deploy(
        self,
        caller: &Identity,
        request: DeployRequest,
    ) -> Result<AgentView, KeepError> {
        caller.require_operator()?;
        let subject = request
            .policy
            .signed
            .get("agent")
            .and_then(Value::as_str)
            .map_or_else(
                || "agent:?".to_owned(),
                |name| format!("agent:{}", crate::manifest::cut(name)),
            );
        match self.try_deploy(caller, &request).await {
            Ok(view) => Ok(view),
            Err(error) => {
                let trust = self.core.trust().await.ok();
                let attempt = documents::attempt(trust.as_ref(), &request.policy, POLICY_TYPE);
                self.core
                    .refuse_attempt(caller, (None, "deploy", &subject), Some(attempt), error)
                    .await
            }
        }
    }

    async fn try_deploy(
        self,
        caller: &Identity,
        request: &DeployRequest,
    ) -> Result<AgentView, KeepError> {
        let trust = self.core.trust().await?;
        let operator_credentials = self
            .core
            .store()
            .keep_vault_entries("operator")
            .await?
            .into_iter()
            .map(|entry| entry.name)
            .collect();
        let deploy = documents::Deploy {
            bundle: &request.bundle,
            bundle_signature: &request.bundle_signature,
            policy: &request.policy,
        };
        let verified =
            documents::verify_deploy(&trust, &deploy, &operator_credentials, self.core.now_s())?;
        let manifest = &verified.manifest;
        let texts = DeployTexts::of(request, manifest)?;
        let mut tx = self.core.store().keep_begin().await?;
        let locked = documents::Locked {
            root_checked: trust.root().version,
            root_now: self.core.trust_root_version_locked(&mut tx).await?,
            highest: self.core.high_water(
                AGENT_KIND,
                &manifest.name,
                tx.high_water(AGENT_KIND, &manifest.name).await?,
            )?,
        };
        documents::check_deploy(&verified, &locked)?;
        self.insert_agent(&mut tx, request, &verified, &texts)
            .await?;
        let detail = deploy_detail(manifest, &verified.bundle_sha256, request)?;
        let subject = format!("agent:{}@{}", manifest.name, manifest.version);
        append(&mut tx, caller, None, &subject, detail).await?;
        self.core
            .commit_and_mark(tx, (AGENT_KIND, manifest.name.clone(), manifest.version))
            .await?;
        self.get(caller, &manifest.name).await
    }

    /// Stores a verified agent, sealed by the host key, and raises its version's mark.
    async fn insert_agent(
        self,
        tx: &mut imurun_store::KeepTx,
        request: &DeployRequest,
        verified: &documents::Verified,
        texts: &DeployTexts,
    ) -> Result<(), KeepError> {
        let manifest = &verified.manifest;
        let bundle_size = i64::try_from(request.bundle.len()).unwrap_or(i64::MAX);
        let seal = crate::seal::seal_agent(
            self.core.host_key(),
            &crate::seal::AgentFields {
                name: &manifest.name,
                version: manifest.version,
                owner: "operator",
                bundle_sha256: &verified.bundle_sha256,
                bundle_size,
                bundle_signature: &texts.signature,
                policy: &texts.policy,
            },
        );
        tx.insert_agent(&imurun_store::NewAgent {
            name: &manifest.name,
            version: manifest.version,
            owner: "operator",
            bundle_sha256: &verified.bundle_sha256,
            bundle: &request.bundle,
            bundle_signature: &texts.signature,
            policy: &texts.policy,
            manifest: &texts.manifest,
            seal: &seal,
        })
        .await?;
        tx.raise_high_water(AGENT_KIND, &manifest.name, manifest.version)
            .await?;
        Ok(())
    }

    /// The operator's view of agent `name` in force.
    pub async fn get(self, caller: &Identity, name: &str) -> Result<AgentView, KeepError> {
        caller.require_operator()?;
        self.checked(name).await
    }

    /// Agent `name` in force, its row checked under the trust root in force.
    pub(crate) async fn checked(self, name: &str) -> Result<AgentView, KeepError> {
        let trust = self.core.trust().await?;
        let row = self
            .core
            .store()
            .keep_agent(name)
            .await?
            .ok_or(KeepError::NotFound("agent"))?;
        self.verified(row, &trust).await
    }

    /// Every agent, as the operator sees it: those in force, and those refused with why (one
    /// row that does not hold must not hide the others).
    pub async fn list(self, caller: &Identity) -> Result<Vec<AgentView>, KeepError> {
        caller.require_operator()?;
        // The trust root is read once for the whole list; without one in force, every agent is
        // listed as refused, with why.
        let trust = self.core.trust().await;
        let mut views = Vec::new();
        for row in self.core.store().keep_agents().await? {
            let unverified = refused_view(&row);
            let verified = match &trust {
                Ok(trust) => self.verified(row, trust).await,
                Err(error) => Err(KeepError::Rule(RuleError::Untrusted(error.to_string()))),
            };
            match verified {
                Ok(view) => views.push(view),
                Err(KeepError::Store(error)) => return Err(KeepError::Store(error)),
                Err(error) => views.push(AgentView {
                    refused: Some(error.to_string()),
                    ..unverified
                }),
            }
        }
        Ok(views)
    }

    /// Every agent in force, as any identity may see it.
    pub async fn public(self) -> Result<Vec<PublicAgentView>, KeepError> {
        // Without a trust root in force no agent is offered.
        let Ok(trust) = self.core.trust().await else {
            return Ok(Vec::new());
        };
        let mut views = Vec::new();
        for row in self.core.store().keep_agents().await? {
            // An agent whose stored row does not hold is not offered to anyone.
            let Ok(view) = self.verified(row, &trust).await else {
                continue;
            };
            // A stored manifest that does not read as one is not offered either.
            let Ok(manifest) =
                serde_json::from_value::<crate::manifest::Manifest>(view.manifest.clone())
            else {
                continue;
            };
            views.push(PublicAgentView {
                name: view.name,
                version: view.version,
                reach: AgentReach::of(&manifest),
                description: manifest.description,
            });
        }
        Ok(views)
    }

    /// A stored agent read back. It is in force only at its high-water version (when newer rows
    /// were deleted — an old database restored — the old version is refused rather than served),
    /// and only as its stored policy says: the policy's signature must hold under a policy key
    /// the trust root in force (`trust`) lists, it must name this agent, version and bundle, and the manifest shown
    /// is the one inside it (a row edited in the database is refused).
    pub(crate) async fn verified(
        self,
        row: imurun_store::AgentRow,
        trust: &crate::trust::Trust,
    ) -> Result<AgentView, KeepError> {
        let in_database = self
            .core
            .store()
            .keep_high_water(AGENT_KIND, &row.name)
            .await?;
        let highest = self.core.high_water(AGENT_KIND, &row.name, in_database)?;
        if row.version != highest {
            return Err(KeepError::Rule(RuleError::RolledBack {
                what: format!("the stored agent {}", row.name),
                version: row.version,
                highest,
            }));
        }
        crate::seal::check_agent(
            &self.core.host_key().public(),
            &crate::seal::AgentFields {
                name: &row.name,
                version: row.version,
                owner: &row.owner,
                bundle_sha256: &row.bundle_sha256,
                bundle_size: row.bundle_size,
                bundle_signature: &row.bundle_signature,
                policy: &row.policy,
            },
            &row.seal,
        )?;
        let policy = Signed::from_text(row.policy.as_bytes())?;
        trust.verify_stored(&policy, crate::documents::POLICY_TYPE)?;
        let (document, manifest) = crate::documents::Policy::from_document(&policy.signed)?;
        crate::trust::check_expiry(
            &format!("the policy for {}", document.agent),
            document.expires_at,
            self.core.now_s(),
        )?;
        if document.agent != row.name
            || document.version != row.version
            || document.bundle_sha256 != row.bundle_sha256
        {
            return Err(KeepError::Rule(RuleError::Untrusted(format!(
                "the stored agent {} does not match its signed policy",
                row.name
            ))));
        }
        let signature: Signature = serde_json::from_str(&row.bundle_signature)
            .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?;
        Ok(AgentView {
            name: row.name,
            version: row.version,
            owner: row.owner,
            bundle_sha256: row.bundle_sha256,
            bundle_size: row.bundle_size,
            signer_key_id: signature.key_id,
            policy_key_id: policy.signature.key_id,
            manifest: serde_json::to_value(&manifest)
                .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?,
            deployed_at_ms: row.deployed_at_ms,
            refused: None,
        })
    }
}

/// A deploy's stored texts: the bundle's signature, the policy's envelope and the manifest.
struct DeployTexts {
    signature: String,
    policy: String,
    manifest: String,
}

impl DeployTexts {
    fn of(request: &DeployRequest, manifest: &Manifest) -> Result<DeployTexts, KeepError> {
        let canonical = |error: serde_json::Error| RuleError::Canonical(error.to_string());
        Ok(DeployTexts {
            signature: serde_json::to_string(&request.bundle_signature).map_err(canonical)?,
            policy: envelope_text(&request.policy)?,
            manifest: serde_json::to_value(manifest)
                .map_err(canonical)?
                .to_string(),
        })
    }
}

/// What the journal keeps of a deploy: names, versions, hashes and the authority granted; never
/// the bundle.
fn deploy_detail(
    manifest: &Manifest,
    bundle_sha256: &str,
    request: &DeployRequest,
) -> Result<DeployDetail, KeepError> {
    Ok(DeployDetail {
        agent: manifest.name.clone(),
        version: manifest.version,
        bundle_sha256: bundle_sha256.to_owned(),
        bundle_size: u64::try_from(request.bundle.len()).unwrap_or(u64::MAX),
        policy_sha256: request.policy.document_sha256()?,
        signer_key_id: request.bundle_signature.key_id.clone(),
        policy_key_id: request.policy.signature.key_id.clone(),
        egress_mode: manifest.egress.mode,
        egress: manifest.egress.rules.clone(),
        credentials: manifest
            .credentials
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        memory: manifest.memory,
        model_socket: manifest.model_socket,
        card: manifest.card,
        resources: manifest.resources,
    })
}

/// What a stored row says of itself, unverified: only for the operator's list of refused
/// agents, marked as refused.
fn refused_view(row: &imurun_store::AgentRow) -> AgentView {
    AgentView {
        name: row.name.clone(),
        version: row.version,
        owner: row.owner.clone(),
        bundle_sha256: row.bundle_sha256.clone(),
        bundle_size: row.bundle_size,
        signer_key_id: String::new(),
        policy_key_id: String::new(),
        manifest: Value::Null,
        deployed_at_ms: row.deployed_at_ms,
        refused: Some(String::new()),
    }
}
